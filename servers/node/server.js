// Node.js `http` module serving the reference response: a reference row outside the JVM, like the
// floor. Node's documented HelloWorld: http.createServer((req, res) => { ...; res.end(body) }).
// Usage: node server.js --port P [--host H] [--name NAME] --template FILE
'use strict';

const fs = require('node:fs');
const http = require('node:http');

const USAGE = 'usage: node server.js --port P [--host H] [--name NAME] --template FILE';

function fail(name, message, status) {
  process.stderr.write(`${name}: ${message}\n`);
  process.exit(status);
}

function parseArgs(argv) {
  const options = { host: '127.0.0.1', port: null, name: 'node', template: null };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    const value = argv[i + 1];
    if (value === undefined || !['--port', '--host', '--name', '--template'].includes(key)) {
      fail('node', `unexpected argument '${key}'; ${USAGE}`, 2);
    }
    options[key.slice(2)] = value;
  }
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    fail(options.name, `--port must be a number from 0 to 65535; ${USAGE}`, 2);
  }
  if (!options.template) {
    fail(options.name, `--template is required; ${USAGE}`, 2);
  }
  return { ...options, port };
}

// The reference response (common's reference-response.txt): '#' comment lines, the status line, the
// headers, an empty line, the body. Returns the headers that are constants, in order, and the body.
function loadReference(path) {
  const lines = fs.readFileSync(path, 'utf8').split('\n').filter((l) => !l.startsWith('#'));
  const blank = lines.indexOf('');
  const headers = lines.slice(1, blank).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]);
  const body = Buffer.from(lines.slice(blank + 1).join('\n'), 'utf8');
  // Node writes Date (cached per second) and Connection itself; Content-Length and Server are set below.
  const written = new Set(['content-length', 'connection', 'date', 'server']);
  return { headers: headers.filter(([n]) => !written.has(n.toLowerCase())), body };
}

const options = parseArgs(process.argv.slice(2));
const ref = loadReference(options.template);
const headers = [...ref.headers, ['Content-Length', String(ref.body.length)], ['Server', options.name]];

const server = http.createServer((req, res) => {
  res.writeHead(200, headers.flat());
  res.end(ref.body);
});
// 0: no Keep-Alive: timeout=5 header (the reference has none) and no idle timeout on a connection.
server.keepAliveTimeout = 0;
server.on('error', (e) => {
  const why = e.code === 'EADDRINUSE'
    ? `cannot listen on ${options.host}:${options.port} (${e.message}): is the port in use?`
    : `failed to start: ${e.message}`;
  fail(options.name, why, 1);
});
server.listen(options.port, options.host, () => {
  process.stdout.write(`READY ${options.name} ${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
