// mcp-test.mjs - `cairn mcp` end to end, driven by the official MCP
// TypeScript SDK's Client and StdioClientTransport (the client Claude
// Desktop, IDEs and agent frameworks build on).
//
// Usage: node --test-reporter=tap mcp-test.mjs /abs/path/to/cairn
//        (or CAIRN_BIN=/abs/path/to/cairn); run-tests.sh does this.
//
// Each group spawns its servers on a fresh store in its own temp directory:
//   1. initialize and tools/list (names, descriptions, schemas)
//   2. every one of the 35 tools with valid arguments
//   3. bad arguments (isError, CAIRN_EINVAL naming the argument), unknown tool
//   4. two servers on one store at once
//   5. clients that go away mid-call, SIGTERM: the server exits 0 by itself,
//      the store verifies and serves again
//   6. --read-only
//   7. global options: --embed-builtin, --no-embed, --busy-timeout
//   8. the protocol itself, without the SDK (version negotiation, errors)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, LATEST_PROTOCOL_VERSION, McpError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.argv[2] || process.env.CAIRN_BIN;
if (!BIN || !path.isAbsolute(BIN) || !fs.existsSync(BIN)) {
    console.error(`mcp-test: give the cairn binary as an absolute path (argv[2] or CAIRN_BIN); got ${BIN}`);
    process.exit(2);
}

const TOOLS = [
    'memory_add', 'memory_recall', 'memory_context', 'memory_search', 'memory_get',
    'memory_list', 'memory_update', 'memory_remove', 'memory_restore', 'memory_forget',
    'memory_stats', 'memory_history', 'log_append', 'log_query', 'episode_new',
    'episode_get', 'episode_list', 'causal_node', 'causal_edge', 'causal_path',
    'causal_status', 'pattern_add', 'pattern_list', 'pattern_anti',
    'stream_add', 'stream_list', 'stream_search', 'core_show', 'core_set', 'core_append',
    'core_remove', 'archival_insert', 'archival_search', 'reflection_add', 'tiers_stats'
];

// ---- helpers ------------------------------------------------------------------

const tmpRoots = [];

/** A fresh directory; the store is made in it by the first server. */
function freshStore(tag) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cairn-mcp-${tag}-`));
    tmpRoots.push(dir);
    return path.join(dir, 'store');
}

after(() => {
    for (const d of tmpRoots) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * A Client connected to `cairn [global...] --store store mcp [args...]`.
 * The server's stderr is kept (and checked for sanitizer or crash output).
 * exited resolves with {code, signal, at (Date.now())} when the process ends.
 */
async function connect(store, { args = [], global = [] } = {}) {
    const transport = new StdioClientTransport({
        command: BIN,
        args: [...global, '--store', store, 'mcp', ...args],
        stderr: 'pipe'
    });
    let stderr = '';
    transport.stderr.on('data', d => { stderr += d; });
    // The Client hands the negotiated version to transports that take it
    // (HTTP ones); stdio does not, so keep it here.
    transport.setProtocolVersion = v => { transport.negotiatedVersion = v; };
    const client = new Client({ name: 'cairn-mcp-test', version: '1.0.0' });
    await client.connect(transport);
    const proc = transport._process; // the SDK keeps the ChildProcess here
    assert.ok(proc && proc.pid, 'the transport spawned a process');
    proc.stdin.setMaxListeners(100); // many large calls in flight each wait for 'drain'
    const exited = new Promise(resolve => {
        proc.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
    });
    return { client, transport, proc, exited, stderr: () => stderr };
}

/** Wait for p, failing after ms. */
function within(p, ms, what) {
    let t;
    return Promise.race([
        p.finally(() => clearTimeout(t)),
        new Promise((_, reject) => { t = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms); })
    ]);
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

/** Close a client and require a clean exit (code 0, no signal, quiet stderr). */
async function closeClean(s) {
    await s.client.close();
    const e = await within(s.exited, 3000, 'server exit after close');
    assert.equal(e.signal, null, `server ended by a signal; stderr: ${s.stderr()}`);
    assert.equal(e.code, 0, `server exit code; stderr: ${s.stderr()}`);
    assertQuietStderr(s);
}

function assertQuietStderr(s) {
    assert.doesNotMatch(s.stderr(), /Sanitizer|runtime error|Segmentation|Aborted|assert/i,
        `server stderr: ${s.stderr()}`);
}

/** cairn --store DIR verify must exit 0. */
function verify(store) {
    const r = spawnSync(BIN, ['--store', store, 'verify'], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 0, `cairn verify: ${r.stdout}${r.stderr}`);
}

const ajv = new AjvJsonSchemaValidator();
let schemas = null; // name -> validator of its inputSchema, from tools/list

/** Check args against the tool's advertised inputSchema (what a client may do). */
function schemaAccepts(name, args) {
    if (schemas === null) return true;
    return schemas.get(name)(args).valid;
}

// A hung server fails its test in seconds, not at the SDK's 60 s default.
const REQ = { timeout: 10000 };

/** A successful tool call: structuredContent, the same as the text content. */
async function call(client, name, args = {}) {
    if (schemas !== null)
        assert.ok(schemaAccepts(name, args), `${name}: its own inputSchema rejects ${JSON.stringify(args)}`);
    const r = await client.callTool({ name, arguments: args }, undefined, REQ);
    assert.notEqual(r.isError, true, `${name} failed: ${JSON.stringify(r.structuredContent ?? r.content)}`);
    assert.equal(r.content.length, 1);
    assert.equal(r.content[0].type, 'text');
    assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent, `${name}: text and structuredContent differ`);
    return r.structuredContent;
}

/** A failed tool call: isError, {error: {code, status, message}}; returns the error. */
async function callFails(client, name, args, code) {
    const r = await client.callTool({ name, arguments: args }, undefined, REQ);
    assert.equal(r.isError, true, `${name}(${JSON.stringify(args)}) should fail, got ${JSON.stringify(r.structuredContent)}`);
    const e = r.structuredContent?.error;
    assert.ok(e, `${name}: no structuredContent.error in ${JSON.stringify(r)}`);
    assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
    assert.equal(e.code, code, `${name}: ${e.message}`);
    assert.equal(typeof e.status, 'number');
    assert.ok(e.status < 0, 'status is the negative cairn code');
    assert.equal(typeof e.message, 'string');
    assert.ok(e.message.length > 0);
    return e;
}

// ---- 1. initialize, tools/list ---------------------------------------------------

describe('initialize and tools/list', () => {
    let s;
    let tools;
    before(async () => { s = await connect(freshStore('init')); });
    after(async () => { await closeClean(s); });

    test('server info: name cairn, a version', () => {
        const info = s.client.getServerVersion();
        assert.equal(info.name, 'cairn');
        assert.match(info.version, /^\d+\.\d+\.\d+/);
        const caps = s.client.getServerCapabilities();
        assert.ok(caps.tools, 'the tools capability');
        assert.equal(typeof s.client.getInstructions(), 'string');
    });

    test('protocol version: the SDK\'s latest, which it accepts', () => {
        assert.ok(SUPPORTED_PROTOCOL_VERSIONS.includes(s.transport.negotiatedVersion));
        assert.equal(s.transport.negotiatedVersion, LATEST_PROTOCOL_VERSION);
    });

    test('ping', async () => {
        assert.deepEqual(await s.client.ping(), {});
    });

    test('tools/list: all 35 tools, described, object schemas', async () => {
        ({ tools } = await s.client.listTools());
        assert.deepEqual(tools.map(t => t.name).sort(), [...TOOLS].sort());
        assert.equal(tools.length, 35);
        for (const t of tools) {
            assert.equal(typeof t.description, 'string', t.name);
            assert.ok(t.description.length > 10, `${t.name} has a description`);
            assert.equal(typeof t.title, 'string', `${t.name} has a title`);
            assert.equal(t.inputSchema.type, 'object', t.name);
            assert.equal(typeof t.inputSchema.properties, 'object', t.name);
            assert.equal(t.inputSchema.additionalProperties, false, t.name);
            for (const r of t.inputSchema.required ?? [])
                assert.ok(r in t.inputSchema.properties, `${t.name}: required ${r} is a property`);
            for (const [p, ps] of Object.entries(t.inputSchema.properties))
                assert.equal(typeof ps.description, 'string', `${t.name}.${p} has a description`);
            assert.equal(typeof t.annotations?.readOnlyHint, 'boolean', `${t.name} annotations`);
        }
        // Every schema compiles (the SDK's own validator); later calls are
        // checked against them.
        schemas = new Map(tools.map(t => [t.name, ajv.getValidator(t.inputSchema)]));
    });

    test('schemas: required fields, enums, ranges, hints', () => {
        const by = Object.fromEntries(tools.map(t => [t.name, t]));
        const props = n => by[n].inputSchema.properties;

        assert.deepEqual(by.memory_add.inputSchema.required, ['content']);
        assert.equal(props('memory_add').content.type, 'string');
        assert.equal(props('memory_add').importance.type, 'number');
        assert.equal(props('memory_add').importance.minimum, 0);
        assert.equal(props('memory_add').importance.maximum, 1);
        assert.equal(props('memory_add').tags.type, 'array');
        assert.equal(props('memory_add').tags.items.type, 'string');

        assert.deepEqual(by.memory_recall.inputSchema.required, ['query']);
        assert.equal(props('memory_recall').k.type, 'integer');
        assert.equal(props('memory_recall').k.minimum, 1);
        assert.equal(props('memory_recall').k.maximum, 1000);
        assert.deepEqual(props('memory_recall').mode.enum, ['hybrid', 'lexical', 'semantic']);

        // byte limits are in the description (JSON Schema's maxLength counts characters)
        assert.match(props('memory_search').query.description, /at most 500 bytes/);
        assert.equal(props('memory_search').query.maxLength, undefined);
        assert.deepEqual(props('memory_search').mode.enum, ['unified', 'lexical', 'semantic']);
        assert.deepEqual(props('memory_context').format.enum, ['bullets', 'prose', 'xml', 'json']);
        assert.deepEqual(props('memory_forget').mode.enum, ['gentle', 'normal', 'aggressive']);

        assert.deepEqual([...by.episode_new.inputSchema.required].sort(), ['outcome', 'session', 'task']);
        assert.deepEqual(props('episode_new').outcome.enum, ['success', 'partial', 'failure']);
        assert.deepEqual([...by.causal_edge.inputSchema.required].sort(), ['source', 'target', 'type']);
        assert.deepEqual(props('causal_edge').type.enum, ['causes', 'enables', 'prevents', 'correlates']);
        assert.ok(props('causal_node').type.enum.includes('decision'));
        assert.equal(props('causal_path').max_depth.minimum, 1);
        assert.equal(props('causal_path').max_depth.maximum, 10);
        assert.deepEqual(by.log_append.inputSchema.required, ['payload']);

        assert.equal(by.memory_stats.inputSchema.required, undefined);
        assert.deepEqual(props('memory_stats'), {});

        // recall and context record accesses (ranking input); search only looks
        assert.equal(by.memory_recall.annotations.readOnlyHint, false);
        assert.equal(by.memory_context.annotations.readOnlyHint, false);
        assert.equal(by.memory_search.annotations.readOnlyHint, true);
        assert.equal(by.memory_add.annotations.readOnlyHint, false);
        assert.equal(by.memory_remove.annotations.destructiveHint, true);
        for (const n of ['memory_get', 'memory_list', 'memory_stats', 'log_query', 'causal_status', 'pattern_list'])
            assert.equal(by[n].annotations.readOnlyHint, true, n);
    });

    test('the schemas reject what the server rejects (client-side check)', () => {
        assert.equal(schemaAccepts('memory_add', {}), false);
        assert.equal(schemaAccepts('memory_add', { content: 5 }), false);
        assert.equal(schemaAccepts('memory_recall', { query: 'x', k: 0 }), false);
        assert.equal(schemaAccepts('memory_get', { id: 'x', bogus: 1 }), false);
        assert.equal(schemaAccepts('causal_node', { type: 'nope', label: 'x' }), false);
        assert.equal(schemaAccepts('memory_recall', { query: 'x', namespace: ['a', 'b'] }), true);
        assert.equal(schemaAccepts('memory_recall', { query: 'x', since: '2026-01-01T00:00:00Z' }), true);
        assert.equal(schemaAccepts('memory_recall', { query: 'x', since: 1767225600000 }), true);
    });
});

// ---- 2. every tool ---------------------------------------------------------------

describe('every tool with valid arguments', () => {
    let s;
    let c;
    let store;
    const used = new Set();
    let id;
    let id2;
    const content = 'The deploy script needs the staging token in CAIRN_DEPLOY_TOKEN';
    const content2 = 'Prefer zstd level 3 for segment compression';

    before(async () => {
        store = freshStore('tools');
        s = await connect(store);
        c = s.client;
        const orig = c.callTool.bind(c);
        c.callTool = (p, ...rest) => { used.add(p.name); return orig(p, ...rest); };
    });
    after(async () => { await closeClean(s); });

    test('memory_add, then memory_get returns the same content', async () => {
        const r = await call(c, 'memory_add', {
            content, category: 'fact', importance: 0.6, tags: ['deploy', 'secrets'],
            metadata: { source: 'test' }, namespace: 'proj'
        });
        assert.equal(r.existed, false);
        assert.match(r.memory.id, /^m[0-9a-f]{16}$/);
        assert.equal(r.memory.content, content);
        assert.equal(r.memory.namespace, 'proj');
        assert.deepEqual(r.memory.metadata, { source: 'test', tags: ['deploy', 'secrets'] });
        id = r.memory.id;

        const again = await call(c, 'memory_add', { content, namespace: 'proj' });
        assert.equal(again.existed, true, 'the same content in a namespace is stored once');
        assert.equal(again.memory.id, id);

        const r2 = await call(c, 'memory_add', { content: content2, category: 'decision', namespace: 'proj', expires_at: '2099-01-01T00:00:00Z' });
        id2 = r2.memory.id;
        assert.equal(r2.memory.expiresAt, Date.UTC(2099, 0, 1));

        const g = await call(c, 'memory_get', { id });
        assert.equal(g.memory.id, id);
        assert.equal(g.memory.content, content);
        assert.equal(g.memory.category, 'fact');
        assert.equal(g.memory.importance, 0.6);
    });

    test('memory_recall finds it, with explain', async () => {
        const r = await call(c, 'memory_recall', { query: 'staging deploy token', namespace: 'proj', k: 3, explain: true });
        assert.ok(r.count >= 1);
        assert.equal(r.memories[0].id, id);
        assert.equal(typeof r.memories[0].score, 'number');
        assert.equal(typeof r.memories[0].explain.bm25, 'number');
        const tagged = await call(c, 'memory_recall', { query: 'compression', namespace: ['proj'], tags: ['deploy'] });
        assert.ok(tagged.memories.every(m => m.id !== id2), 'the tags filter keeps out an untagged memory');
        const none = await call(c, 'memory_recall', { query: 'staging deploy token' });
        assert.equal(none.count, 0, 'the default namespace "" holds none of them');
    });

    test('memory_context contains it', async () => {
        const r = await call(c, 'memory_context', { query: 'deploy token', namespace: 'proj' });
        assert.match(r.context, /CAIRN_DEPLOY_TOKEN/);
        assert.ok(r.included >= 1);
        const x = await call(c, 'memory_context', { query: 'deploy token', namespace: 'proj', format: 'xml', max_tokens: 1000 });
        assert.match(x.context, /</);
    });

    test('memory_search: relevance alone, best scores 1', async () => {
        const r = await call(c, 'memory_search', { query: 'zstd compression', namespace: 'proj', mode: 'lexical' });
        assert.equal(r.results[0].id, id2);
        assert.equal(r.results[0].score, 1);
        assert.equal(r.count, r.results.length);
    });

    test('memory_list lists both, oldest first', async () => {
        const r = await call(c, 'memory_list', { namespace: 'proj' });
        assert.equal(r.count, 2);
        assert.deepEqual(r.memories.map(m => m.id), [id, id2]);
        assert.equal(r.truncated, false);
        const one = await call(c, 'memory_list', { namespace: 'proj', limit: 1 });
        assert.equal(one.count, 1);
        assert.equal(one.truncated, true);
        const dec = await call(c, 'memory_list', { namespace: 'proj', category: 'decision' });
        assert.deepEqual(dec.memories.map(m => m.id), [id2]);
    });

    test('memory_update changes importance and tags', async () => {
        const r = await call(c, 'memory_update', { id, importance: 0.9, tags: ['ops'] });
        assert.equal(r.memory.importance, 0.9);
        assert.deepEqual(r.memory.metadata.tags, ['ops']);
        assert.equal(r.memory.metadata.source, 'test', 'tags alone keep the rest of the metadata');
        const g = await call(c, 'memory_get', { id });
        assert.equal(g.memory.importance, 0.9);
        const n = await call(c, 'memory_update', { id: id2, expires_at: 'never' });
        assert.equal(n.memory.expiresAt, null);
    });

    test('memory_remove, get fails with CAIRN_ENOTFOUND, memory_restore brings it back', async () => {
        const r = await call(c, 'memory_remove', { id, reason: 'test' });
        assert.equal(r.removed, id);
        const e = await callFails(c, 'memory_get', { id }, 'CAIRN_ENOTFOUND');
        assert.match(e.message, new RegExp(id));
        const again = await callFails(c, 'memory_remove', { id }, 'CAIRN_ENOTFOUND');
        assert.match(again.message, new RegExp(id));
        const rs = await call(c, 'memory_restore', { id });
        assert.equal(rs.memory.id, id);
        assert.equal(rs.memory.content, content);
        const g = await call(c, 'memory_get', { id });
        assert.equal(g.memory.importance, 0.9, 'restored as it was');
    });

    test('memory_history lists its records, oldest first', async () => {
        const r = await call(c, 'memory_history', { id });
        assert.equal(r.id, id);
        assert.ok(r.records.length >= 4, `store, update, delete, restore: ${JSON.stringify(r.records.map(x => x.type))}`);
        const seqs = r.records.map(x => x.seq);
        assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
        for (const rec of r.records) {
            assert.equal(typeof rec.type, 'string');
            assert.match(rec.ts, /^\d{4}-\d\d-\d\dT/);
        }
        await callFails(c, 'memory_history', { id: 'm0000000000000000' }, 'CAIRN_ENOTFOUND');
    });

    test('memory_forget dry_run counts and changes nothing', async () => {
        const r = await call(c, 'memory_forget', { dry_run: true, mode: 'aggressive', namespace: 'proj' });
        assert.equal(r.dry_run, true);
        assert.equal(r.mode, 'aggressive');
        assert.equal(typeof r.pruned, 'number');
        assert.equal(r.pruned + r.kept, 2);
        const st = await call(c, 'memory_stats');
        assert.equal(st.total, 2, 'a dry run removes nothing');
        const real = await call(c, 'memory_forget', { mode: 'gentle', namespace: 'proj' });
        assert.equal(real.pruned, 0, 'nothing is expired or old');
    });

    test('memory_stats totals', async () => {
        const st = await call(c, 'memory_stats', {});
        assert.equal(st.total, 2);
        assert.deepEqual(st.byCategory, { decision: 1, fact: 1 });
        assert.equal(st.namespaces, 1);
        assert.ok(st.avgImportance > 0 && st.avgImportance <= 1);
        assert.ok(st.oldest <= st.newest);
        assert.equal(typeof st.vectors.count, 'number');
    });

    test('log_append returns a seq, log_query finds the payload', async () => {
        const payload = { kind: 'tool-test', n: 42, nested: { ok: true, list: [1, 'two'] } };
        const a = await call(c, 'log_append', { payload, namespace: 'audit' });
        assert.equal(typeof a.seq, 'number');
        assert.ok(a.seq > 0);
        const b = await call(c, 'log_append', { payload: 'just a string', namespace: 'audit', type: 'event' });
        assert.equal(b.seq, a.seq + 1);
        const q = await call(c, 'log_query', { namespace: 'audit', from_seq: a.seq });
        assert.equal(q.count, 2);
        assert.deepEqual(q.records[0].payload, payload);
        assert.equal(q.records[0].seq, a.seq);
        assert.equal(q.records[0].ns, 'audit');
        assert.equal(q.records[0].type, 'event');
        assert.equal(q.records[1].payload, 'just a string');
        assert.equal(q.next_seq, null);
        const page = await call(c, 'log_query', { limit: 1, type: 'memory' });
        assert.equal(page.count, 1);
        assert.equal(typeof page.next_seq, 'number', 'a next page');
    });

    test('episode_new, episode_get, episode_list', async () => {
        const n = await call(c, 'episode_new', {
            session: 'sess-1', task: 'fix the flaky deploy', outcome: 'success',
            lessons: ['pin the token'], metrics: { tool_calls: 7 },
            decisions: [{ type: 'design', context: 'flaky', chosen: 'retry', rationale: 'cheap', outcome: 'success', effects: [] }]
        });
        assert.equal(n.episode.id, 'episode-sess-1');
        assert.equal(n.episode.outcome, 'success');
        assert.deepEqual(n.episode.lessons, ['pin the token']);
        await call(c, 'episode_new', { session: 'sess-2', task: 'try the other thing', outcome: 'failure' });
        await callFails(c, 'episode_new', { session: 'sess-1', task: 'again', outcome: 'partial' }, 'CAIRN_EEXIST');

        const g = await call(c, 'episode_get', { session: 'sess-1' });
        assert.equal(g.episode.task, 'fix the flaky deploy');
        assert.equal(g.episode.metrics.tool_calls, 7);
        const g2 = await call(c, 'episode_get', { session: 'episode-sess-1' });
        assert.equal(g2.episode.id, 'episode-sess-1');
        await callFails(c, 'episode_get', { session: 'nope' }, 'CAIRN_ENOTFOUND');

        const l = await call(c, 'episode_list', {});
        assert.deepEqual(l.episodes.map(e => e.id).sort(), ['episode-sess-1', 'episode-sess-2']);
        const f = await call(c, 'episode_list', { outcome: 'failure', max_results: 5 });
        assert.deepEqual(f.episodes.map(e => e.id), ['episode-sess-2']);
    });

    test('causal_node x2, causal_edge by label and by id, causal_path, causal_status', async () => {
        const a = await call(c, 'causal_node', { type: 'decision', label: 'add retries to deploy' });
        const b = await call(c, 'causal_node', { type: 'outcome', label: 'deploy is stable', episode: 'episode-sess-1' });
        const d = await call(c, 'causal_node', { type: 'error', label: 'token expired' });
        assert.match(a.node.id, /^n[0-9a-f]{16}$/);
        assert.equal(a.node.type, 'decision');
        assert.equal(a.node.frequency, 1);
        assert.notEqual(a.node.id, b.node.id);
        const again = await call(c, 'causal_node', { type: 'decision', label: 'add retries to deploy' });
        assert.equal(again.node.id, a.node.id);
        assert.equal(again.node.frequency, 2);

        const byLabel = await call(c, 'causal_edge', { source: 'add retries to deploy', target: 'deploy is stable', type: 'causes', weight: 0.8 });
        assert.equal(byLabel.edge.source, a.node.id);
        assert.equal(byLabel.edge.target, b.node.id);
        assert.equal(byLabel.edge.type, 'causes');
        assert.equal(byLabel.edge.weight, 0.8);
        const byId = await call(c, 'causal_edge', { source: d.node.id, target: b.node.id, type: 'prevents' });
        assert.equal(byId.edge.source, d.node.id);
        assert.equal(byId.edge.weight, 0.5);
        const missing = await callFails(c, 'causal_edge', { source: 'no such node', target: 'deploy is stable', type: 'causes' }, 'CAIRN_ENOTFOUND');
        assert.match(missing.message, /source/);

        const p = await call(c, 'causal_path', { from_label: 'retries', to_label: 'STABLE' });
        assert.equal(p.found, true);
        assert.equal(p.depth, 1);
        assert.deepEqual(p.path.map(n => n.id), [a.node.id, b.node.id]);
        const nop = await call(c, 'causal_path', { from_label: 'deploy is stable', to_label: 'token expired', max_depth: 3 });
        assert.equal(nop.found, false);
        assert.equal(typeof nop.reason, 'string'); // not found is no error
        assert.equal(nop.error, undefined);

        const st = await call(c, 'causal_status', {});
        assert.equal(st.nodes, 3);
        assert.equal(st.edges, 2);
        assert.equal(st.episodes, 2);
        assert.match(st.updated, /^\d{4}-/);
    });

    test('pattern_add twice with a low success rate: pattern_anti; a good one: pattern_list', async () => {
        const p1 = await call(c, 'pattern_add', { name: 'force push on red CI', trigger: 'CI fails', action: 'git push -f', success_rate: 0.1 });
        assert.equal(p1.pattern.occurrences, 1);
        const p2 = await call(c, 'pattern_add', { name: 'force push on red CI', trigger: 'CI fails', action: 'git push -f', success_rate: 0.2 });
        assert.equal(p2.pattern.id, p1.pattern.id);
        assert.equal(p2.pattern.occurrences, 2);
        assert.ok(Math.abs(p2.pattern.success_rate - 0.15) < 1e-9, `running average: ${p2.pattern.success_rate}`);
        const good = await call(c, 'pattern_add', { name: 'bisect a regression', trigger: 'a test broke', action: 'git bisect', description: 'find the commit', success_rate: 0.95, episode: 'episode-sess-1' });

        const anti = await call(c, 'pattern_anti', {});
        assert.deepEqual(anti.patterns.map(p => p.id), [p1.pattern.id]);
        assert.equal(anti.count, 1);

        const list = await call(c, 'pattern_list', { min_success_rate: 0.5 });
        assert.deepEqual(list.patterns.map(p => p.id), [good.pattern.id]);
        assert.equal(list.patterns[0].description, 'find the commit');
        const two = await call(c, 'pattern_list', { min_occurrences: 2 });
        assert.deepEqual(two.patterns.map(p => p.id), [p1.pattern.id]);
        const st = await call(c, 'causal_status');
        assert.equal(st.patterns, 2);
    });

    test('the tiers: stream, core, archival, reflections, stats', async () => {
        const a = await call(c, 'stream_add', { content: 'fixed the flaky CI job', cycle: 12, role: 'ops', importance: 9, issue_refs: [84], tags: ['ci'] });
        assert.equal(a.existed, false);
        assert.equal(a.entry.cycle, 12);
        assert.deepEqual(a.entry.issueRefs, [84]);
        await call(c, 'stream_add', { content: 'reviewed the release notes', cycle: 13, role: 'qa', scope: 'repo:acme/api' });
        const l = await call(c, 'stream_list', { cycle_from: 10, cycle_to: 20, scope: 'repo:acme/api' });
        assert.deepEqual(l.entries.map(e => [e.cycle, e.scope]), [[12, 'global'], [13, 'repo:acme/api']]);
        const none = await callFails(c, 'stream_list', { cycle_from: 50, cycle_to: 60 }, 'CAIRN_ENOTFOUND');
        assert.match(none.message, /12\.\.12/);
        await callFails(c, 'stream_list', { cycle_from: 20, cycle_to: 10 }, 'CAIRN_EQUERY');
        const f = await call(c, 'stream_search', { query: 'flaky CI', issue: 84 });
        assert.equal(f.entries.length, 1);
        assert.equal(f.entries[0].role, 'ops');

        await call(c, 'core_set', { section: 'roleState', role: 'qa', value: '{"workingOn":"#145"}' });
        const ap = await call(c, 'core_append', { section: 'lessons', value: 'compress early' });
        const core = await call(c, 'core_show', {});
        assert.deepEqual(core.sections.roleState.qa, { workingOn: '#145' });
        assert.equal(core.sections.lessons[0].value, 'compress early');
        const rm = await call(c, 'core_remove', { section: 'lessons', item_id: ap.item.id });
        assert.equal(rm.removed, ap.item.id);

        const ins = await call(c, 'archival_insert', { content: 'ADR-7: segments are sealed with zstd', type: 'adr', date: '2026-02-01', wait: true });
        assert.equal(ins.entry.type, 'adr');
        const as = await call(c, 'archival_search', { query: 'zstd segments', type: 'adr', since: '2026-01-01T00:00:00Z' });
        assert.equal(as.entries.length, 1);

        await call(c, 'reflection_add', { content: 'CI flakes come from shared runners', cycle: 13, outcome: 'success' });
        const st = await call(c, 'tiers_stats', {});
        assert.equal(st.recall.entryCount, 1, 'the global stream');
        assert.equal(st.lastReflection.cycle, 13);
        assert.equal(st.archival.entryCount, 1);
    });

    test('every tool was called', () => {
        assert.deepEqual(TOOLS.filter(t => !used.has(t)), []);
    });

    test('the store verifies while the server is up', () => {
        verify(store);
    });
});

// ---- 3. bad arguments, unknown tool ----------------------------------------------

describe('bad arguments and unknown tools', () => {
    let s;
    before(async () => { s = await connect(freshStore('bad')); });
    after(async () => { await closeClean(s); });

    const cases = [
        ['missing required argument', 'memory_add', {}, /content/],
        ['missing required argument (no arguments at all)', 'memory_get', undefined, /\bid\b/],
        ['missing one of several required', 'episode_new', { session: 's', task: 't' }, /outcome/],
        ['wrong type (number for string)', 'memory_add', { content: 5 }, /content/],
        ['wrong type (string for integer)', 'memory_recall', { query: 'x', k: '3' }, /\bk\b/],
        ['wrong type (fraction for integer)', 'memory_list', { limit: 1.5 }, /limit/],
        ['wrong type (object for array)', 'memory_add', { content: 'x', tags: { a: 1 } }, /tags/],
        ['wrong type (array of numbers for strings)', 'memory_recall', { query: 'x', categories: [1, 2] }, /categories/],
        ['wrong type (string for boolean)', 'memory_forget', { dry_run: 'yes' }, /dry_run/],
        ['out of range (k: 0)', 'memory_recall', { query: 'x', k: 0 }, /\bk\b/],
        ['out of range (k: 1001)', 'memory_context', { query: 'x', k: 1001 }, /\bk\b/],
        ['out of range (importance: 1.5)', 'memory_add', { content: 'x', importance: 1.5 }, /importance/],
        ['out of range (negative weight)', 'causal_edge', { source: 'a', target: 'b', type: 'causes', weight: -0.1 }, /weight/],
        ['too long (query over 500 bytes)', 'memory_search', { query: 'q'.repeat(501) }, /query/, false],
        ['unknown argument', 'memory_get', { id: 'm0000000000000000', bogus: 1 }, /bogus/],
        ['unknown argument on a tool without any', 'memory_stats', { verbose: true }, /verbose/],
        ['bad enum (mode)', 'memory_recall', { query: 'x', mode: 'psychic' }, /mode/],
        ['bad enum (outcome)', 'episode_new', { session: 's', task: 't', outcome: 'meh' }, /outcome/],
        ['bad enum (node type)', 'causal_node', { type: 'vibe', label: 'x' }, /type/],
        ['bad time text', 'memory_recall', { query: 'x', since: 'last tuesday' }, /since/, false]
    ];

    for (const [what, tool, args, names, schemaCatches = true] of cases) {
        test(`${what}: ${tool} -> isError CAIRN_EINVAL naming it`, async () => {
            if (schemaCatches)
                assert.equal(schemaAccepts(tool, args ?? {}), false, 'the inputSchema rejects it too');
            const r = await s.client.callTool({ name: tool, ...(args === undefined ? {} : { arguments: args }) }, undefined, REQ);
            assert.equal(r.isError, true, JSON.stringify(r.structuredContent));
            const e = r.structuredContent.error;
            assert.equal(e.code, 'CAIRN_EINVAL', e.message);
            assert.equal(e.status, -3);
            assert.match(e.message, names);
            assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
        });
    }

    test('a string cut inside a surrogate pair: CAIRN_EINVAL at once, not a timeout', async () => {
        // JSON.stringify sends the lone half as the escape \ud83d, which
        // JSON allows but which is not text.
        const r = await s.client.callTool({ name: 'memory_add', arguments: { content: 'cut emoji \ud83d' } },
            undefined, { timeout: 3000 });
        assert.equal(r.isError, true);
        assert.equal(r.structuredContent.error.code, 'CAIRN_EINVAL');
        assert.match(r.structuredContent.error.message, /surrogate/);
        const pair = await call(s.client, 'memory_add', { content: 'whole emoji \ud83d\ude00 and a literal \\udc00' });
        assert.equal(pair.memory.content, 'whole emoji \u{1F600} and a literal \\udc00');
        await call(s.client, 'memory_remove', { id: pair.memory.id });
    });

    test('a NUL inside a string: CAIRN_EINVAL naming the argument (never cut short)', async () => {
        const e = await callFails(s.client, 'memory_add', { content: 'before\u0000after' }, 'CAIRN_EINVAL');
        assert.match(e.message, /content/);
    });

    test('a failed call changes nothing', async () => {
        const st = await call(s.client, 'memory_stats');
        assert.equal(st.total, 0);
    });

    test('unknown tool: the call rejects with McpError -32602, the session goes on', async () => {
        await assert.rejects(
            s.client.callTool({ name: 'memory_teleport', arguments: {} }),
            e => e instanceof McpError && e.code === ErrorCode.InvalidParams && /memory_teleport/.test(e.message)
        );
        assert.deepEqual(await s.client.ping(), {});
        const r = await call(s.client, 'memory_add', { content: 'still serving' });
        assert.equal(r.existed, false);
    });
});

// ---- 4. two servers on one store -------------------------------------------------

describe('two servers on the same store at once', () => {
    let store;
    let a;
    let b;
    const ids = { a: [], b: [] };
    before(async () => {
        store = freshStore('two');
        [a, b] = await Promise.all([connect(store), connect(store)]);
    });
    after(async () => { await Promise.all([closeClean(a), closeClean(b)]); verify(store); });

    test('both write 20 memories, interleaved', async () => {
        const calls = [];
        for (let i = 0; i < 20; i++) {
            calls.push(call(a.client, 'memory_add', { content: `alpha note ${i} written by server A`, tags: ['a'] }).then(r => ids.a.push(r.memory.id)));
            calls.push(call(b.client, 'memory_add', { content: `bravo note ${i} written by server B`, tags: ['b'] }).then(r => ids.b.push(r.memory.id)));
        }
        await Promise.all(calls);
        assert.equal(new Set([...ids.a, ...ids.b]).size, 40);
    });

    test('each sees the other\'s memories without reconnecting', async () => {
        for (const [self, theirs, word] of [[a, ids.b, 'bravo'], [b, ids.a, 'alpha']]) {
            const st = await call(self.client, 'memory_stats');
            assert.equal(st.total, 40, 'memory_stats total');
            const g = await call(self.client, 'memory_get', { id: theirs[7] });
            assert.equal(g.memory.id, theirs[7]);
            const r = await call(self.client, 'memory_recall', { query: word, k: 50, mode: 'lexical' });
            assert.equal(r.count, 20, `recall of ${word}`);
            assert.deepEqual(r.memories.map(m => m.id).sort(), [...theirs].sort());
        }
    });

    test('a change by one is seen by the other: update, remove', async () => {
        await call(a.client, 'memory_update', { id: ids.b[0], importance: 0.99 });
        assert.equal((await call(b.client, 'memory_get', { id: ids.b[0] })).memory.importance, 0.99);
        await call(b.client, 'memory_remove', { id: ids.a[0] });
        await callFails(a.client, 'memory_get', { id: ids.a[0] }, 'CAIRN_ENOTFOUND');
        assert.equal((await call(a.client, 'memory_stats')).total, 39);
        await call(a.client, 'memory_restore', { id: ids.a[0] });
        assert.equal((await call(b.client, 'memory_stats')).total, 40);
    });

    test('log and reflexion writes from both', async () => {
        const [x, y] = await Promise.all([
            call(a.client, 'log_append', { payload: { from: 'a' } }),
            call(b.client, 'log_append', { payload: { from: 'b' } })
        ]);
        assert.notEqual(x.seq, y.seq);
        const q = await call(b.client, 'log_query', { from_seq: Math.min(x.seq, y.seq) });
        assert.deepEqual(q.records.map(r => r.payload.from).sort(), ['a', 'b']);

        await call(a.client, 'causal_node', { type: 'event', label: 'written by A' });
        await call(b.client, 'causal_node', { type: 'event', label: 'written by B' });
        await call(b.client, 'causal_edge', { source: 'written by A', target: 'written by B', type: 'enables' });
        const p = await call(a.client, 'causal_path', { from_label: 'by A', to_label: 'by B' });
        assert.equal(p.found, true, 'A sees B\'s node and edge');
        await call(a.client, 'episode_new', { session: 'from-a', task: 't', outcome: 'partial' });
        assert.equal((await call(b.client, 'episode_get', { session: 'from-a' })).episode.outcome, 'partial');
    });
});

// ---- 5. clients that go away, signals --------------------------------------------

describe('disconnects and signals', () => {
    test('transport closed with calls in flight: the server exits 0 by itself', async () => {
        const store = freshStore('close');
        const s = await connect(store);
        const big = 'payload '.repeat(20000);
        const inflight = [];
        for (let i = 0; i < 20; i++)
            inflight.push(s.client.callTool({ name: 'memory_add', arguments: { content: `in flight ${i} ${big}` } }).catch(e => e));
        await sleep(0);
        const t0 = Date.now();
        // Client.close ends the server's stdin and waits 2 s before it
        // sends SIGTERM: the server must be gone before that.
        const closing = s.client.close();
        const e = await within(s.exited, 1900, 'server exit after stdin closed');
        await closing;
        assert.equal(e.signal, null, `stderr: ${s.stderr()}`);
        assert.equal(e.code, 0, `stderr: ${s.stderr()}`);
        assert.ok(e.at - t0 < 1900, `exited after ${e.at - t0} ms`);
        assertQuietStderr(s);
        await Promise.all(inflight);
        verify(store);

        const n = await connect(store);
        const st = await call(n.client, 'memory_stats');
        assert.ok(st.total >= 0 && st.total <= 20);
        assert.equal((await call(n.client, 'memory_add', { content: 'after the disconnect' })).existed, false);
        await closeClean(n);
        verify(store);
    });

    test('both pipes torn down mid-call (stdout gone: EPIPE): exits 0, store verifies', async () => {
        const store = freshStore('epipe');
        const s = await connect(store);
        const inflight = [];
        for (let i = 0; i < 30; i++)
            inflight.push(s.client.callTool({ name: 'memory_add', arguments: { content: `torn ${i} ${'x'.repeat(50000)}` } }).catch(e => e));
        await inflight[0]; // the server is busy with the rest
        s.proc.stdout.destroy();
        s.proc.stdin.destroy();
        const e = await within(s.exited, 3000, 'server exit after its pipes closed');
        assert.equal(e.signal, null, `stderr: ${s.stderr()}`);
        assert.equal(e.code, 0, `stderr: ${s.stderr()}`);
        assertQuietStderr(s);
        await s.client.close().catch(() => {});
        verify(store);
        const n = await connect(store);
        const st = await call(n.client, 'memory_stats');
        assert.ok(st.total >= 1 && st.total <= 30, `total ${st.total}`);
        await call(n.client, 'memory_add', { content: 'after the torn pipes' });
        await closeClean(n);
        verify(store);
    });

    test('client process killed (SIGKILL) mid-call: the orphaned server exits 0', async () => {
        const store = freshStore('kill');
        const status = path.join(path.dirname(store), 'server-exit-status');
        const child = spawn(process.execPath, [path.join(HERE, 'kill-client.mjs'), BIN, store, status], {
            cwd: HERE, stdio: ['ignore', 'pipe', 'pipe']
        });
        let out = '';
        let err = '';
        child.stderr.on('data', d => { err += d; });
        await within(new Promise((resolve, reject) => {
            child.stdout.on('data', d => { out += d; if (/inflight/.test(out)) resolve(); });
            child.once('exit', () => reject(new Error(`kill-client ended early: ${out}${err}`)));
        }), 5000, 'kill-client to start its calls');
        child.kill('SIGKILL');
        // The server (a grandchild, now orphaned) writes its status through
        // the sh wrapper when it exits.
        const t0 = Date.now();
        while (!fs.existsSync(status) || fs.readFileSync(status, 'utf8').trim() === '') {
            assert.ok(Date.now() - t0 < 3000, 'the orphaned server did not exit within 3 s');
            await sleep(20);
        }
        assert.equal(fs.readFileSync(status, 'utf8').trim(), '0', 'its exit status (128+N: a signal)');
        verify(store);
        const n = await connect(store);
        const st = await call(n.client, 'memory_stats');
        assert.ok(st.total >= 1, `total ${st.total}`);
        await call(n.client, 'memory_add', { content: 'after the client was killed' });
        await closeClean(n);
        verify(store);
    });

    test('SIGTERM while idle: exits 0, the store verifies', async () => {
        const store = freshStore('term');
        const s = await connect(store);
        await call(s.client, 'memory_add', { content: 'before SIGTERM' });
        await call(s.client, 'log_append', { payload: { before: 'sigterm' } });
        await sleep(50); // idle: blocked in read()
        s.proc.kill('SIGTERM');
        const e = await within(s.exited, 2000, 'server exit after SIGTERM');
        assert.equal(e.signal, null, 'handled, not killed by it');
        assert.equal(e.code, 0);
        assertQuietStderr(s);
        await s.client.close();
        verify(store);
        const n = await connect(store);
        assert.equal((await call(n.client, 'memory_stats')).total, 1);
        await closeClean(n);
    });

    test('SIGTERM with calls in flight: the call under way ends, then exit 0', async () => {
        const store = freshStore('term-busy');
        const s = await connect(store);
        const inflight = [];
        for (let i = 0; i < 30; i++)
            inflight.push(s.client.callTool({ name: 'memory_add', arguments: { content: `busy ${i} ${'z'.repeat(50000)}` } }).catch(e => e));
        await inflight[0];
        s.proc.kill('SIGTERM');
        const e = await within(s.exited, 2000, 'server exit after SIGTERM');
        assert.equal(e.signal, null);
        assert.equal(e.code, 0, `stderr: ${s.stderr()}`);
        assertQuietStderr(s);
        await s.client.close();
        await Promise.all(inflight);
        verify(store);
        const n = await connect(store);
        const st = await call(n.client, 'memory_stats');
        assert.ok(st.total >= 1 && st.total <= 30, `total ${st.total}`);
        await closeClean(n);
    });

    test('SIGINT while idle: exits 0', async () => {
        const store = freshStore('int');
        const s = await connect(store);
        await call(s.client, 'memory_add', { content: 'before SIGINT' });
        s.proc.kill('SIGINT');
        const e = await within(s.exited, 2000, 'server exit after SIGINT');
        assert.equal(e.signal, null);
        assert.equal(e.code, 0);
        await s.client.close();
        verify(store);
    });
});

// ---- 6. read-only ----------------------------------------------------------------

describe('--read-only', () => {
    let store;
    let ro;
    let rw;
    before(async () => {
        store = freshStore('ro');
        const w = await connect(store);
        await call(w.client, 'memory_add', { content: 'the read-only server can recall this' });
        await closeClean(w);
        ro = await connect(store, { args: ['--read-only'] });
    });
    after(async () => {
        await closeClean(ro);
        if (rw) await closeClean(rw);
        verify(store);
    });

    test('write tools fail with CAIRN_EPERM', async () => {
        await callFails(ro.client, 'memory_add', { content: 'nope' }, 'CAIRN_EPERM');
        await callFails(ro.client, 'log_append', { payload: { no: 1 } }, 'CAIRN_EPERM');
        await callFails(ro.client, 'causal_node', { type: 'event', label: 'nope' }, 'CAIRN_EPERM');
        assert.equal((await call(ro.client, 'memory_stats')).total, 1);
    });

    test('memory_recall and other reads work', async () => {
        const r = await call(ro.client, 'memory_recall', { query: 'recall read-only' });
        assert.equal(r.count, 1);
        assert.match(r.memories[0].content, /read-only server/);
        await call(ro.client, 'memory_list', {});
        await call(ro.client, 'log_query', {});
        await call(ro.client, 'causal_status', {});
    });

    test('sees what a writer server adds meanwhile', async () => {
        rw = await connect(store);
        const m = await call(rw.client, 'memory_add', { content: 'added while the reader was up' });
        const g = await call(ro.client, 'memory_get', { id: m.memory.id });
        assert.equal(g.memory.content, 'added while the reader was up');
    });

    test('on a missing store: the server does not start (exit 1)', async () => {
        const missing = freshStore('ro-missing');
        const r = spawnSync(BIN, ['--store', missing, 'mcp', '--read-only'], { input: '', encoding: 'utf8', timeout: 5000 });
        assert.equal(r.status, 1, r.stderr);
        assert.match(r.stderr, /store|exist|not found/i);
        assert.equal(fs.existsSync(missing), false, 'not created');
    });
});

// ---- 7. global options: embedder, busy timeout ------------------------------------

describe('global options: --embed-builtin, --no-embed, --busy-timeout', () => {
    let store;
    before(() => { store = freshStore('embed'); });

    test('--embed-builtin: vectors, semantic search and recall', async () => {
        const s = await connect(store, { global: ['--embed-builtin'] });
        const m = await call(s.client, 'memory_add', { content: 'the database migrations run at deploy time' });
        await call(s.client, 'memory_add', { content: 'cats sleep sixteen hours a day' });
        const st = await call(s.client, 'memory_stats');
        assert.equal(st.vectors.count, 2);
        assert.equal(typeof st.vectors.embedder, 'string');
        assert.ok(st.vectors.dimensions > 0);
        const r = await call(s.client, 'memory_search', { query: 'migrating databases', mode: 'semantic' });
        assert.equal(r.results[0].id, m.memory.id);
        assert.equal(r.results[0].source, 'semantic');
        const rc = await call(s.client, 'memory_recall', { query: 'database migration', mode: 'semantic', k: 1 });
        assert.equal(rc.memories[0].id, m.memory.id);
        await closeClean(s);
    });

    test('no option: a store with built-in vectors keeps embedding', async () => {
        const s = await connect(store);
        await call(s.client, 'memory_add', { content: 'auto picks the built-in embedder' });
        assert.equal((await call(s.client, 'memory_stats')).vectors.count, 3);
        await closeClean(s);
    });

    test('--no-embed: lexical only, semantic modes are CAIRN_EUNAVAIL', async () => {
        const s = await connect(store, { global: ['--no-embed'] });
        await call(s.client, 'memory_add', { content: 'stored without a vector' });
        assert.equal((await call(s.client, 'memory_stats')).vectors.count, 3);
        await callFails(s.client, 'memory_search', { query: 'database', mode: 'semantic' }, 'CAIRN_EUNAVAIL');
        await callFails(s.client, 'memory_recall', { query: 'database', mode: 'semantic' }, 'CAIRN_EUNAVAIL');
        const r = await call(s.client, 'memory_recall', { query: 'database', mode: 'lexical' });
        assert.equal(r.count, 1);
        await closeClean(s);
    });

    test('--busy-timeout MS before or after the command', async () => {
        for (const opts of [{ global: ['--busy-timeout', '250'] }, { args: ['--busy-timeout', '250'] }]) {
            const s = await connect(store, opts);
            assert.equal((await call(s.client, 'memory_stats')).total, 4);
            await closeClean(s);
        }
        verify(store);
    });

    test('usage errors exit 64: --embed-cmd, an unknown option', () => {
        for (const argv of [['--embed-cmd', 'cat', '--store', store, 'mcp'], ['--store', store, 'mcp', '--bogus']]) {
            const r = spawnSync(BIN, argv, { input: '', encoding: 'utf8', timeout: 5000 });
            assert.equal(r.status, 64, `${argv.join(' ')}: ${r.stderr}`);
            assert.equal(r.stdout, '', 'nothing on stdout (it is the protocol\'s)');
        }
    });
});

// ---- 8. the protocol without the SDK ---------------------------------------------

/** Send lines to a fresh server, close stdin, return the parsed answers. */
function rawExchange(store, lines) {
    const r = spawnSync(BIN, ['--store', store, 'mcp'], { input: lines.join('\n') + '\n', encoding: 'utf8', timeout: 5000 });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean).map(l => JSON.parse(l));
}

describe('protocol details (raw JSON-RPC)', () => {
    const init = (v, id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

    test('negotiates each of its versions; an unknown one gets its latest', () => {
        const store = freshStore('raw');
        for (const v of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'])
            assert.equal(rawExchange(store, [init(v)])[0].result.protocolVersion, v);
        assert.equal(rawExchange(store, [init('1999-01-01')])[0].result.protocolVersion, '2025-11-25');
    });

    test('ping, notifications, unknown method, parse error, ids kept', () => {
        const store = freshStore('raw2');
        const out = rawExchange(store, [
            init('2025-11-25', 'init-id'),
            JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
            JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
            JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'resources/list' }),
            '{not json',
            JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'memory_stats' } }),
            JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'nope', arguments: {} } })
        ]);
        assert.equal(out.length, 6, 'no answer to the notification');
        assert.equal(out[0].id, 'init-id');
        assert.deepEqual(out[1], { jsonrpc: '2.0', id: 2, result: {} });
        assert.equal(out[2].id, 3);
        assert.equal(out[2].error.code, -32601);
        assert.equal(out[3].id, null);
        assert.equal(out[3].error.code, -32700);
        assert.equal(out[4].id, 4);
        assert.equal(out[4].result.isError, false);
        assert.equal(out[4].result.structuredContent.total, 0);
        assert.equal(out[5].error.code, -32602);
    });
});
