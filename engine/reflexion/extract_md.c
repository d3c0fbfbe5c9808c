/*
 * extract_md.c - the markdown session log reader of the episode extractor.
 *
 * A markdown log is a title, a header block of "**Key**: value" lines
 * (Date, Objective, Status, Duration, Starting Commit), then sections. The
 * reader is line-based and keeps, per heading level, what kind of section
 * it is in; the kind comes from the heading's words and otherwise from the
 * parent heading:
 *
 *   END        "Session End", "Closure Checklist": undone MUST rows / boxes
 *              make the outcome partial; checked list boxes are milestones
 *   LESSONS    "Lessons Learned", "Learnings", "Lesson 2: <title>": lessons
 *   DECISIONS  "Decisions", "Decision: <chosen>": decisions (+ Rationale)
 *   ERROR      "Incident: ...", "Bugs": an error event from the heading and
 *              its first line; Resolution / fix lines are its recovery
 *   NEXT       "Next Steps", "Follow-up", "Handoff": handoff events
 *   OBJECTIVE  "Objective(s)", "Goals": the task, when no **Objective** line
 *   STATUS     "Status", "Outcome": its first line states the status
 *   WORK       "Phase N", "Actions Taken", "Work Performed", "Deliverables",
 *              "Commits", "Summary", ...: list items, checked boxes, table
 *              rows and "**Something Done**:" lines are work events
 *   SKIP       protocol compliance, context, reviewers, analysis, findings,
 *              metrics, notes: ceremony and background, read for nothing
 *              but the header keys
 *
 * Anywhere outside SKIP sections and code fences: a line about commits
 * yields commit events; a "**Decision**:" line opens a decision; shell code
 * blocks give one tool_call per command. The date and the starting commit
 * are read in a first pass, so every event has the log's date and the
 * starting commit is never taken for a commit of the session.
 */
#include <stdlib.h>
#include <string.h>

#include "extract_int.h"

enum { K_NEUTRAL, K_HEADER, K_SKIP, K_WORK, K_END, K_LESSONS, K_DECISIONS, K_ERROR, K_NEXT,
       K_OBJECTIVE, K_STATUS };

typedef struct md {
    xb *b;
    int eff[7];        /* effective kind per heading level 1..6 */
    int kind;          /* kind of the current section */
    int level;         /* level of the current heading, 0 before any */
    int commit_sec;    /* the heading names commits: each hash in it is one */
    int status_sec;    /* **Status** lines here are the session's status */
    int status_first;  /* STATUS section whose first line is still to come */
    int task_from;     /* 0 none, 1 an objective section, 2 an Objective line */
    int task_sec;      /* this section feeds the task */
    xtext head[7];     /* heading text per level */
    xtext title;       /* the H1 title */
    int err_pending, err_ev, err_fixed; /* ERROR section state */
    int dec_open, rat_collect;          /* a decision being collected */
    xtext dec_chosen, dec_ctx, dec_rat;
    int dec_head;      /* opened by a "Decision N: topic" heading, no Decision line yet */
    int opt_collect;   /* the list items after an Options line are its options */
    int label_list;    /* the list items after another "**Label:**" line are its
                          (consequences, notes), not decisions */
    cJSON *dec_opts;   /* the options weighed (NULL: none) */
    int les_open;      /* a lesson titled by its heading */
    xtext les;
    int prev;          /* last work event, for the chain */
    int fence;         /* inside a ``` / ~~~ block */
    char fch;          /* its fence character */
    size_t flen;       /* its fence length */
    int shell, cont;   /* a shell block; the last command line continues */
    int table_sep;     /* the current table's separator row was seen */
    int sub_skip;      /* list items under a "**Protocol Compliance**:" lead-in */
} md;

static const char *const K_END_W[] = {"session end", "end checklist", "closure checklist",
    "closing checklist", "session closure", "end of session", NULL};
static const char *const K_ERR_W[] = {"incident*", "bug", "bugs", "error", "errors", "outage*",
    "crash*", NULL};
static const char *const K_NEXT_W[] = {"next step*", "follow-up*", "follow up", "followup*",
    "future work", "remaining work", "open items", "handoff", "hand-off", "todo", NULL};
static const char *const K_OBJ_W[] = {"objective*", "goal", "goals", NULL};
/* "Outcomes" (plural) lists what was achieved: work, not a status line */
static const char *const K_STAT_W[] = {"status", "outcome", NULL};
static const char *const K_WORK1[] = {"phase", "conducted", "performed", "actions taken",
    "work log", "worklog", "work performed", "deliverable*", "commits", "created",
    "changes made", "completed", "bonus task", "accomplish*", NULL};
static const char *const K_SKIP_W[] = {"protocol", "compliance", "session start", "serena",
    "context", "session log", "skill validation", "memor*", "metadata", "reviewer*",
    "review comment*", "thread*", "files referenced", "example*", "pattern", "git status",
    "statistic*", "metric*", "finding*", "analysis", "recommendation*", "option", "inventory",
    "root cause", "note", "notes", "team", "strength*", "improvement*", "governance",
    "enforcement", "investigation", "issues to create", "actionable", "reference*", "appendix",
    NULL};
static const char *const K_WORK2[] = {"summary", "progress", "implement*", "execution",
    "timeline", "task*", "verification", "fix*", "artifact*", "changes", "work", "actions",
    "steps", "results", "outcomes", "conclusion", NULL};
static const char *const STATUS_SEC_W[] = {"status", "outcome", "summary", "closure", "final",
    "session end", NULL};
static const char *const META_KEYS[] = {"branch", "state", "author", "title", "number", "base",
    "status", "files", "pr", "type", "agent", "session", "date", "repository",
    "working directory", "reviewers", "active reviewers", "checks", "review", "labels", "url",
    "total comments", "total review comments", "total issue comments", "starting commit", NULL};
static const char *const CMD_W[] = {"gh", "git", "npx", "npm", "pwsh", "python", "python3", "uv",
    "make", "cargo", "go", "pytest", "docker", "curl", "jq", "node", "bash", "sh", "mcp__*",
    NULL};
static const char *const SHELL_LANG[] = {"bash", "sh", "shell", "zsh", "console", "powershell",
    "pwsh", "ps1", "terminal", NULL};

/* p[0..n) (trimmed) equals one of the words, ignoring case. */
static int is_one(const char *p, size_t n, const char *const *ws)
{
    for (; *ws != NULL; ws++)
        if (strlen(*ws) == n && cairn__x_word(p, n, *ws))
            return 1;
    return 0;
}

static int is_key(const char *k, size_t kn, const char *w)
{
    const char *const one[] = {w, NULL};
    return is_one(k, kn, one);
}

/* A list item: indent, marker, optional check box. *box: 0 none, 1 [x],
 * 2 [ ], 3 another ([N/A]). Returns 1 and the text start in *at. */
static int list_item(const char *l, size_t n, size_t *indent, size_t *at, int *box)
{
    size_t i = 0, ind = 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        ind += l[i++] == '\t' ? 4 : 1;
    if (i + 1 < n && (l[i] == '-' || l[i] == '*' || l[i] == '+') && l[i + 1] == ' ') {
        i += 2;
    } else {
        size_t d = i;
        while (d < n && d - i < 9 && l[d] >= '0' && l[d] <= '9')
            d++;
        if (d == i || d + 1 >= n || (l[d] != '.' && l[d] != ')') || l[d + 1] != ' ')
            return 0;
        i = d + 2;
    }
    while (i < n && l[i] == ' ')
        i++;
    *box = 0;
    if (i + 2 < n && l[i] == '[') {
        size_t c = i + 1;
        while (c < n && c - i < 6 && l[c] != ']')
            c++;
        if (c < n && l[c] == ']') {
            *box = c == i + 2 && (l[i + 1] == 'x' || l[i + 1] == 'X') ? 1
                 : c == i + 2 && l[i + 1] == ' ' ? 2 : 3;
            i = c + 1;
        }
    }
    *indent = ind;
    *at = i;
    return 1;
}

/* "**Key**: value", "**Key:** value" or "Key: value" (after an optional
 * list marker). Key spans k[0..kn), value starts at *va. */
static int key_value(const char *l, size_t n, size_t *ka, size_t *kn, size_t *va)
{
    size_t i = 0, ind, at, e;
    int box;
    if (list_item(l, n, &ind, &at, &box))
        i = box ? n : at;
    while (i < n && l[i] == ' ')
        i++;
    if (i + 2 < n && l[i] == '*' && l[i + 1] == '*') {
        size_t k = i + 2;
        while (k + 1 < n && k - i < 64 && !(l[k] == '*' && l[k + 1] == '*'))
            k++;
        if (k + 1 >= n || l[k] != '*')
            return 0;
        e = k + 2;
        if (k > i + 2 && l[k - 1] == ':')
            k--;
        else if (e < n && l[e] == ':')
            e++;
        else
            return 0;
        *ka = i + 2;
        *kn = k - (i + 2);
    } else {
        size_t k = i;
        if (i >= n || !((l[i] >= 'A' && l[i] <= 'Z') || (l[i] >= 'a' && l[i] <= 'z')))
            return 0;
        while (k < n && k - i < 40 && l[k] != ':' && l[k] != '`' && l[k] != '|' && l[k] != '[')
            k++;
        if (k >= n || l[k] != ':' || (k + 1 < n && l[k + 1] != ' '))
            return 0;
        *ka = i;
        *kn = k - i;
        e = k + 1;
    }
    while (*kn > 0 && l[*ka + *kn - 1] == ' ')
        (*kn)--;
    while (e < n && l[e] == ' ')
        e++;
    *va = e;
    return *kn > 0;
}

/* Minutes in "~60 minutes", "1.5 hours", "45 min"; -1 if none. */
static long minutes(const char *p, size_t n)
{
    size_t i = 0;
    double v = 0, f = 0.1;
    while (i < n && i < 8 && (p[i] < '0' || p[i] > '9'))
        i++;
    if (i >= n || p[i] < '0' || p[i] > '9')
        return -1;
    for (; i < n && p[i] >= '0' && p[i] <= '9' && v < 1e7; i++)
        v = v * 10 + (p[i] - '0');
    if (i + 1 < n && p[i] == '.')
        for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++, f /= 10)
            v += (p[i] - '0') * f;
    while (i < n && p[i] == ' ')
        i++;
    if (i < n && (p[i] == 'h' || p[i] == 'H'))
        v *= 60;
    else if (i < n && (p[i] == 'd' || p[i] == 'D'))
        v *= 1440;
    return v > 1e7 ? 10000000L : (long)v;
}

/* The leading whole number of p (within 8 bytes), or -1. */
static long lead_num(const char *p, size_t n)
{
    long v = -1;
    for (size_t i = 0; i < n && i < 12 && (v >= 0 || i < 8); i++) {
        if (p[i] >= '0' && p[i] <= '9')
            v = (v < 0 ? 0 : v) * 10 + (p[i] - '0');
        else if (v >= 0 || p[i] != '~')
            break;
        if (v > 100000000L)
            return -1;
    }
    return v;
}

/* The bold lead-in of a non-list line ("**PR Metadata**:", "**Reviewers
 * Enumerated** (x):"): its text span, or 0. */
static int bold_lead(const char *l, size_t n, size_t *ka, size_t *kn)
{
    size_t k = 2;
    if (n < 5 || l[0] != '*' || l[1] != '*')
        return 0;
    while (k + 1 < n && k < 66 && !(l[k] == '*' && l[k + 1] == '*'))
        k++;
    if (k + 1 >= n || l[k] != '*')
        return 0;
    *ka = 2;
    *kn = k - 2;
    return 1;
}

/* The value is just a date ("**Completed**: 2025-12-21"). */
static int dated(const char *p, size_t n)
{
    char ts[21];
    int timed;
    long long ep;
    return n <= 32 && cairn__x_ts(p, n, ts, &timed, &ep);
}

static void flush_decision(md *m)
{
    xtext ch = m->dec_chosen, rat = m->dec_rat;
    size_t cut, rest;
    if (!m->dec_open)
        return;
    m->dec_open = m->rat_collect = 0;
    if (rat.n == 0 && cairn__x_because(&m->dec_chosen, &cut, &rest)) {
        cairn__xt_init(&ch);
        cairn__xt_put(&ch, m->dec_chosen.s, cut);
        cairn__xt_put(&rat, m->dec_chosen.s + rest, m->dec_chosen.n - rest);
    }
    cairn__xb_decision(m->b, NULL, &m->dec_ctx, &ch, &rat, NULL, NULL, m->dec_opts);
    m->dec_opts = NULL;
    m->dec_head = m->opt_collect = 0;
}

static void open_decision(md *m, const char *p, size_t n)
{
    flush_decision(m);
    m->dec_open = 1;
    cairn__xt_init(&m->dec_chosen);
    cairn__xt_init(&m->dec_rat);
    cairn__xt_md(&m->dec_chosen, p, n);
    m->dec_ctx = m->head[m->level > 0 ? m->level : 0];
    if (m->kind == K_DECISIONS && m->level > 1 && m->dec_ctx.n > 0 &&
        cairn__x_word(m->dec_ctx.s, m->dec_ctx.n, "decision*"))
        m->dec_ctx = m->head[m->level - 1];
}

/* A "Decision: X" line. After a "Decision N: topic" heading it is that
 * decision's choice, the topic its context; else a decision of its own. */
static void decision_line(md *m, const char *p, size_t n)
{
    if (m->dec_open && m->dec_head) {
        m->dec_ctx = m->dec_chosen; /* the heading's topic */
        cairn__xt_init(&m->dec_chosen);
        cairn__xt_md(&m->dec_chosen, p, n);
        m->dec_head = m->opt_collect = 0;
        return;
    }
    open_decision(m, p, n);
}

/* One option of the decision being collected. */
static void add_option(md *m, const char *p, size_t n)
{
    xtext t;
    cairn__xt_init(&t);
    cairn__xt_md(&t, p, n);
    cairn__xb_option(m->b, &m->dec_opts, &t);
}

static void add_rationale(md *m, const char *p, size_t n)
{
    if (m->dec_rat.n > 0)
        cairn__xt_puts(&m->dec_rat, ";");
    m->dec_rat.space = 1;
    cairn__xt_md(&m->dec_rat, p, n);
}

static void flush_section(md *m)
{
    flush_decision(m);
    m->label_list = m->opt_collect = 0;
    if (m->les_open)
        cairn__xb_lesson(m->b, &m->les);
    m->les_open = 0;
    if (m->err_ev >= 0 && m->err_fixed)
        m->b->recoveries++;
    m->err_pending = 0;
    m->err_ev = -1;
    m->err_fixed = 0;
}

/* A work event chained after the previous one. */
static int work(md *m, const xtext *t, const char *type)
{
    int ev;
    if (type != NULL) {
        ev = cairn__xb_event(m->b, type, t, NULL);
        m->b->ntool += ev >= 0 && strcmp(type, "tool_call") == 0;
    } else {
        ev = cairn__xb_work(m->b, t, NULL);
    }
    if (ev >= 0) {
        cairn__xb_link(m->b, m->prev, ev);
        m->prev = ev;
    }
    return ev;
}

/* Text after "N. " / "Lesson N:" style prefixes, and after "Word:" when
 * `colon` (a "Decision: X" heading). */
static size_t strip_num(const char *p, size_t n, int colon)
{
    size_t i = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++;
    if (i > 0 && i < n && (p[i] == '.' || p[i] == ')'))
        for (i++; i < n && p[i] == ' '; i++)
            ;
    else
        i = 0;
    if (colon) {
        const char *c = memchr(p + i, ':', n - i);
        if (c != NULL && (size_t)(c - p) - i < 48)
            for (i = (size_t)(c - p) + 1; i < n && p[i] == ' '; i++)
                ;
    }
    return i;
}

static void heading(md *m, int lv, const char *p, size_t n)
{
    xtext *h = &m->head[lv];
    int own, parent, numbered = 0;
    size_t s;
    flush_section(m);
    cairn__xt_init(h);
    cairn__xt_md(h, p, n);
    for (int k = lv + 1; k <= 6; k++)
        cairn__xt_init(&m->head[k]);
    m->level = lv;
    m->table_sep = 0;
    m->sub_skip = 0;
    if (lv == 1) {
        if (m->title.n == 0)
            m->title = *h;
        for (int k = 1; k <= 6; k++)
            m->eff[k] = K_HEADER;
        m->kind = K_HEADER;
        m->commit_sec = m->status_sec = m->task_sec = m->status_first = m->label_list = 0;
        return;
    }
    parent = m->eff[lv - 1] == K_HEADER ? K_NEUTRAL : m->eff[lv - 1];
    s = strip_num(h->s, h->n, 0);
    numbered = s > 0 && parent == K_WORK;
    own = cairn__x_any(h->s, h->n, K_END_W) ? K_END
        : cairn__x_lessonish(h->s, h->n) ? K_LESSONS
        : cairn__x_word(h->s, h->n, "decision*") ? K_DECISIONS
        : cairn__x_any(h->s, h->n, K_ERR_W) ? K_ERROR
        : cairn__x_any(h->s, h->n, K_NEXT_W) ? K_NEXT
        : cairn__x_any(h->s, h->n, K_OBJ_W) ? K_OBJECTIVE
        : h->n <= 20 && cairn__x_any(h->s, h->n, K_STAT_W) ? K_STATUS
        : numbered || cairn__x_any(h->s, h->n, K_WORK1) ? K_WORK
        : cairn__x_any(h->s, h->n, K_SKIP_W) ? K_SKIP
        : cairn__x_any(h->s, h->n, K_WORK2) ? K_WORK : K_NEUTRAL;
    m->kind = own == K_NEUTRAL ? parent : own == K_WORK && parent == K_SKIP ? K_SKIP : own;
    for (int k = lv; k <= 6; k++)
        m->eff[k] = m->kind;
    m->commit_sec = m->kind != K_SKIP && cairn__x_word(h->s, h->n, "commit*");
    m->status_sec = m->kind == K_STATUS || cairn__x_any(h->s, h->n, STATUS_SEC_W);
    m->status_first = m->kind == K_STATUS;
    m->task_sec = m->kind == K_OBJECTIVE && m->task_from == 0;
    if (m->task_sec)
        m->task_from = 1;
    if (m->kind == K_ERROR)
        m->err_pending = 1;
    if (m->kind == K_WORK && numbered) {
        xtext t;
        cairn__xt_init(&t);
        cairn__xt_put(&t, h->s + s, h->n - s);
        work(m, &t, NULL);
    }
    if (m->kind == K_DECISIONS && memchr(h->s, ':', h->n) != NULL) {
        s = strip_num(h->s, h->n, 1);
        if (s < h->n) {
            open_decision(m, h->s + s, h->n - s);
            m->dec_head = 1;
        }
    }
    if (m->kind == K_LESSONS && memchr(h->s, ':', h->n) != NULL) {
        s = strip_num(h->s, h->n, 1);
        cairn__xt_init(&m->les);
        cairn__xt_put(&m->les, h->s + s, h->n - s);
        m->les_open = m->les.n > 0;
    }
}

/* Inline command: the item starts with `cmd ...` naming a tool. */
static int commandish(const char *p, size_t n)
{
    size_t i = 0, w;
    while (i < n && (p[i] == ' ' || (unsigned char)p[i] >= 0x80))
        i++; /* check marks */
    if (i >= n || p[i] != '`')
        return 0;
    for (w = ++i; w < n && p[w] != ' ' && p[w] != '`'; w++)
        ;
    if (w - i > 3 && (memcmp(p + w - 3, ".py", 3) == 0 || memcmp(p + w - 3, ".sh", 3) == 0 ||
                      (w - i > 4 && memcmp(p + w - 4, ".ps1", 4) == 0)))
        return 1;
    return w > i && is_one(p + i, w - i, CMD_W);
}

static int table_row(md *m, const char *l, size_t n)
{
    xtext t;
    size_t i = 0, c;
    int sep = 1, ncell = 0;
    for (c = 0; c < n; c++)
        if (l[c] != '|' && l[c] != '-' && l[c] != ':' && l[c] != ' ' && l[c] != '\t')
            sep = 0;
    if (sep) {
        m->table_sep = 1;
        return -1;
    }
    if (!m->table_sep)
        return -1; /* the header row */
    if (m->kind == K_END) {
        int open = 0;
        for (c = 0; c + 2 < n; c++)
            open |= l[c] == '[' && l[c + 1] == ' ' && l[c + 2] == ']';
        if (open && cairn__x_word(l, n, "must") &&
            !cairn__x_word(l, n, "must not") && !cairn__x_na(l, n))
            m->b->open_must++;
        return -1;
    }
    if (m->kind != K_WORK || m->commit_sec || cairn__x_status(l, n) == X_PARTIAL)
        return -1;
    cairn__xt_init(&t);
    while (i < n && l[i] == ' ')
        i++;
    if (i < n && l[i] == '|')
        i++;
    while (i < n) {
        size_t e = i;
        xtext cell;
        while (e < n && l[e] != '|')
            e++;
        cairn__xt_init(&cell);
        cairn__xt_md(&cell, l + i, e - i);
        if (ncell++ == 0 && cairn__x_word(cell.s, cell.n, "total"))
            return -1;
        if (cell.n > 0) {
            if (t.n > 0)
                cairn__xt_puts(&t, " -");
            t.space = t.n > 0;
            cairn__xt_put(&t, cell.s, cell.n);
        }
        i = e + 1;
    }
    return work(m, &t, NULL);
}

static void shell_line(md *m, const char *l, size_t n)
{
    size_t i = 0;
    int cont = m->cont;
    xtext t;
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    while (n > i && (l[n - 1] == ' ' || l[n - 1] == '\t'))
        n--;
    m->cont = n > i && (l[n - 1] == '\\' || l[n - 1] == '`' || l[n - 1] == '|');
    if (cont || i >= n || l[i] == '#')
        return;
    if (n - i >= 2 && (l[i] == '$' || l[i] == '>') && l[i + 1] == ' ')
        i += 2;
    cairn__xt_init(&t);
    cairn__xt_puts(&t, "Ran: ");
    cairn__xt_put(&t, l + i, n - i);
    work(m, &t, "tool_call");
}

static void line(md *m, const char *l, size_t n)
{
    xb *b = m->b;
    size_t i = 0, ka = 0, kn = 0, va = 0, ind = 0, at = 0, ba, bn;
    int box = 0, kv, li = 0, ev = -1, lv = 0;
    xtext t;

    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (n - i >= 3 && (l[i] == '`' || l[i] == '~') && l[i + 1] == l[i] && l[i + 2] == l[i]) {
        size_t f = i;
        while (f < n && l[f] == l[i])
            f++;
        if (m->fence && l[i] == m->fch && f - i >= m->flen) {
            m->fence = 0;
        } else if (!m->fence) {
            size_t e = f;
            while (e < n && l[e] != ' ' && l[e] != '{')
                e++;
            m->fence = 1;
            m->fch = l[i];
            m->flen = f - i;
            m->shell = m->kind != K_SKIP && is_one(l + f, e - f, SHELL_LANG);
            m->cont = 0;
        }
        return;
    }
    if (m->fence) {
        if (m->shell)
            shell_line(m, l, n);
        return;
    }
    if (i == n) { /* blank */
        m->rat_collect = 0;
        m->table_sep = 0;
        if (m->dec_opts != NULL)
            m->opt_collect = 0; /* the options' list ended (a blank may precede it) */
        m->label_list = 0;
        return;
    }
    {
        size_t k = i;
        while (k < n && (l[k] == l[i] || l[k] == ' ') && (l[i] == '-' || l[i] == '*' || l[i] == '_'))
            k++;
        if (k == n && n - i >= 3)
            return; /* a rule: --- / *** / ___ */
    }
    while (i + (size_t)lv < n && lv < 7 && l[i + (size_t)lv] == '#')
        lv++;
    if (i == 0 && lv >= 1 && lv <= 6 && ((size_t)lv == n || l[lv] == ' ')) {
        size_t e = n;
        while (e > (size_t)lv && (l[e - 1] == '#' || l[e - 1] == ' '))
            e--;
        heading(m, lv, l + lv, e > (size_t)lv ? e - (size_t)lv : 0);
        return;
    }
    if (l[i] == '|') {
        ev = table_row(m, l + i, n - i);
    } else {
        kv = key_value(l, n, &ka, &kn, &va);
        li = list_item(l, n, &ind, &at, &box);
        if (m->opt_collect && (kv || !li))
            m->opt_collect = 0; /* another key line, or a paragraph, ends the options */
        if (m->label_list && (kv || !li))
            m->label_list = 0;
        if (kv && va >= n && m->kind == K_DECISIONS && !li)
            m->label_list = 1; /* "**Consequences:**" and its list */
        cairn__xt_init(&t);
        cairn__xt_md(&t, l + (li ? at : i), n - (li ? at : i));
        if (!li && i == 0 && bold_lead(l, n, &ba, &bn))
            m->sub_skip = cairn__x_any(l + ba, bn, K_SKIP_W);
        if (kv && (is_key(l + ka, kn, "objective") || is_key(l + ka, kn, "objectives") ||
                   is_key(l + ka, kn, "goal")) && va < n && m->task_from < 2) {
            cairn__xt_init(&b->task);
            cairn__xt_md(&b->task, l + va, n - va);
            m->task_from = 2;
            m->task_sec = 0;
            return;
        } else if (kv && (is_key(l + ka, kn, "session status") ||
                          is_key(l + ka, kn, "session outcome") ||
                          ((is_key(l + ka, kn, "status") || is_key(l + ka, kn, "outcome")) &&
                           (m->kind == K_HEADER || m->status_sec)))) {
            int s = cairn__x_status(l + va, n - va);
            if (s > b->status)
                b->status = s;
            m->status_first = 0;
            return;
        } else if (kv && is_key(l + ka, kn, "duration")) {
            if (b->duration < 0)
                b->duration = minutes(l + va, n - va);
            return;
        } else if (kv && (is_key(l + ka, kn, "files modified") ||
                          is_key(l + ka, kn, "files changed"))) {
            long v = lead_num(l + va, n - va);
            if (v >= 0)
                b->files_changed = v;
        } else if (kv && is_key(l + ka, kn, "decision") && va < n) {
            decision_line(m, l + va, n - va);
            return;
        } else if (kv && m->dec_open &&
                   (is_key(l + ka, kn, "options") || is_key(l + ka, kn, "alternatives") ||
                    is_key(l + ka, kn, "options considered") ||
                    is_key(l + ka, kn, "alternatives considered"))) {
            if (va < n)
                add_option(m, l + va, n - va);
            else
                m->opt_collect = 1; /* the list that follows */
            m->label_list = 0;
            return;
        } else if (kv && m->dec_open && (is_key(l + ka, kn, "rationale") ||
                                         is_key(l + ka, kn, "reason") || is_key(l + ka, kn, "why"))) {
            if (va < n)
                add_rationale(m, l + va, n - va);
            else
                m->rat_collect = 1;
            return;
        } else if (m->rat_collect && m->dec_open && (li || !kv)) {
            add_rationale(m, l + (li ? at : i), n - (li ? at : i));
            return;
        }
        if (m->status_first) {
            int s = cairn__x_status(l + i, n - i);
            if (s > b->status)
                b->status = s;
            m->status_first = 0;
        }
        if (m->task_sec && m->task_from == 1 && (li ? ind < 2 : 1)) {
            if (b->task.n > 0 && b->task.s[b->task.n - 1] != ':')
                cairn__xt_puts(&b->task, ";");
            b->task.space = b->task.n > 0;
            cairn__xt_put(&b->task, t.s, t.n);
        }
        switch (m->kind) {
        case K_ERROR:
            if (m->err_pending) {
                xtext e;
                size_t s = strip_num(m->head[m->level].s, m->head[m->level].n, 0);
                cairn__xt_init(&e);
                cairn__xt_put(&e, m->head[m->level].s + s, m->head[m->level].n - s);
                cairn__xt_puts(&e, ":");
                e.space = 1;
                cairn__xt_put(&e, t.s, t.n);
                m->err_pending = 0;
                m->err_ev = work(m, &e, "error");
                b->errors++;
                m->err_fixed = cairn__x_fixish(t.s, t.n);
            } else if ((kv && (is_key(l + ka, kn, "resolution") || is_key(l + ka, kn, "fix") ||
                               is_key(l + ka, kn, "mitigation") || is_key(l + ka, kn, "workaround") ||
                               is_key(l + ka, kn, "recovery"))) ||
                       (li && ind < 2 && !kv && cairn__x_fixish(t.s, t.n))) {
                ev = work(m, &t, "milestone");
                m->err_fixed = 1;
            }
            break;
        case K_LESSONS:
            if (m->les_open && m->les.n > 0 && kv && m->les.n < EXTRACT_STR_MAX &&
                (is_key(l + ka, kn, "pattern") || is_key(l + ka, kn, "lesson") ||
                 is_key(l + ka, kn, "insight")) && !memchr(m->les.s, ':', m->les.n)) {
                cairn__xt_puts(&m->les, ":");
                m->les.space = 1;
                cairn__xt_md(&m->les, l + va, n - va);
            } else if (!m->les_open && li && ind < 2 && !box) {
                size_t s = strip_num(t.s, t.n, cairn__x_word(t.s, t.n > 12 ? 12 : t.n, "lesson"));
                xtext x;
                cairn__xt_init(&x);
                cairn__xt_put(&x, t.s + s, t.n - s);
                cairn__xb_lesson(b, &x);
            }
            break;
        case K_DECISIONS:
            if (li && m->opt_collect && m->dec_open)
                add_option(m, l + at, n - at);
            else if (li && ind < 2 && !box && !m->label_list)
                open_decision(m, l + at, n - at);
            break;
        case K_NEXT:
            if ((li && ind < 2) || !li) {
                xtext x;
                cairn__xt_init(&x);
                cairn__xt_puts(&x, "Next step: ");
                cairn__xt_put(&x, t.s, t.n);
                if (t.n > 0 && box != 1)
                    cairn__xb_event(b, "handoff", &x, NULL);
            }
            break;
        case K_END:
        case K_WORK:
        case K_NEUTRAL:
            if (li && box == 2 && m->kind == K_END && !cairn__x_na(t.s, t.n))
                b->open_must++;
            if (li && box == 1) {
                ev = work(m, &t, NULL);
            } else if (m->kind == K_WORK && li && ind < 2 && !box && !m->commit_sec &&
                       !m->sub_skip &&
                       t.n > 0 && t.s[t.n - 1] != ':' &&
                       !(kv && is_one(l + ka, kn, META_KEYS))) {
                ev = work(m, &t, commandish(l + at, n - at) ? "tool_call" : NULL);
            } else if (m->kind == K_WORK && kv && !li && va < n && kn > 2 && !dated(l + va, n - va) &&
                       ((l[ka + kn - 1] == 'd' && l[ka + kn - 2] == 'e') ||
                        is_key(l + ka, kn, "finding") || is_key(l + ka, kn, "result") ||
                        is_key(l + ka, kn, "outcome") || is_key(l + ka, kn, "resolution"))) {
                ev = work(m, &t, is_key(l + ka, kn, "finding") ? "milestone" : NULL);
            }
            if (ev >= 0 && cairn__x_decides(&t)) {
                int d;
                open_decision(m, t.s, t.n);
                d = (int)b->ndc;
                flush_decision(m);
                cairn__xb_effect(b, d, ev);
            }
            break;
        default:
            break;
        }
    }
    /* commits: a line about commits (not the starting one) outside SKIP */
    if (m->kind != K_SKIP &&
        (m->commit_sec || cairn__x_word(l, n, "commit*") || cairn__x_word(l, n, "sha")) &&
        !cairn__x_word(l, n, "starting commit") && !cairn__x_word(l, n, "base commit")) {
        cairn__xb_commits(b, l, n, NULL, ev, NULL);
    }
}

/* First pass: the date and the starting commit. */
static void prepass(xb *b, const char *p, size_t len)
{
    size_t pos = 0;
    int fence = 0, found = 0;
    while (pos < len) {
        const char *l = p + pos, *nl = memchr(l, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - l) : len - pos, ka, kn, va, i = 0;
        pos += n + 1;
        while (i < n && l[i] == ' ')
            i++;
        if (n - i >= 3 && (memcmp(l + i, "```", 3) == 0 || memcmp(l + i, "~~~", 3) == 0))
            fence = !fence;
        if (fence || !key_value(l, n, &ka, &kn, &va))
            continue;
        if (!found && is_key(l + ka, kn, "date")) {
            char ts[21];
            int timed;
            long long ep;
            if (cairn__x_ts(l + va, n - va, ts, &timed, &ep)) {
                memcpy(b->ts, ts, sizeof ts);
                found = 1;
            }
        } else if (is_key(l + ka, kn, "starting commit") || is_key(l + ka, kn, "start commit") ||
                   is_key(l + ka, kn, "base commit")) {
            cairn__xb_start_commit(b, l + va, n - va);
        }
    }
}

int cairn__extract_md(xb *b, const char *p, size_t len)
{
    md *m = calloc(1, sizeof *m);
    size_t pos = 0;
    if (m == NULL)
        return CAIRN_ENOMEM;
    m->b = b;
    m->prev = m->err_ev = -1;
    m->kind = K_HEADER;
    for (int k = 0; k <= 6; k++)
        m->eff[k] = K_HEADER;
    prepass(b, p, len);
    while (pos < len && b->rc == CAIRN_OK) {
        const char *l = p + pos, *nl = memchr(l, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - l) : len - pos;
        pos += n + 1;
        line(m, l, n > 0 && l[n - 1] == '\r' ? n - 1 : n);
    }
    flush_section(m);
    if (b->task.n == 0 && m->title.n > 0)
        b->task = m->title;
    cJSON_Delete(m->dec_opts);
    free(m);
    return CAIRN_OK;
}
