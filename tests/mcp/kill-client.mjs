// kill-client.mjs - a client for mcp-test.mjs to SIGKILL mid-call.
// Usage: node kill-client.mjs CAIRN_BIN STORE STATUS_FILE
// Spawns the server through `sh -c` so that its exit status lands in
// STATUS_FILE even after this process is gone, starts memory_add calls,
// prints "inflight" once the server is busy with them and waits to be killed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [bin, store, status] = process.argv.slice(2);
const transport = new StdioClientTransport({
    command: '/bin/sh',
    args: ['-c', 'st=$1; shift; "$@"; echo $? > "$st"', 'sh', status, bin, '--store', store, 'mcp'],
    stderr: 'inherit'
});
const client = new Client({ name: 'kill-client', version: '1.0.0' });
await client.connect(transport);
transport._process.stdin.setMaxListeners(100); // 30 large calls each wait for 'drain'
const calls = [];
for (let i = 0; i < 30; i++)
    calls.push(client.callTool({ name: 'memory_add', arguments: { content: `doomed ${i} ${'y'.repeat(50000)}` } }));
await calls[0];
process.stdout.write('inflight\n');
await new Promise(() => setInterval(() => {}, 1000)); // until killed
