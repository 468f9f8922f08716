// The demo checkout service: GET /checkout prices a cart and renders a receipt.
// Profiled by @roottrace/node when ROOTTRACE_SERVER is set, as service DEMO_SERVICE (default
// "checkout"; bench/truth runs several).
'use strict';

const http = require('node:http');
const path = require('node:path');
const { applyDiscount, tax } = require('./pricing');
const { renderReceipt } = require('./render');

const version = process.env.DEMO_VERSION || '1.0';
let profiler = null;
if (process.env.ROOTTRACE_SERVER) {
  const rt = require(path.resolve(__dirname, '../../../sdk/node'));
  profiler = rt.start({
    server: process.env.ROOTTRACE_SERVER,
    key: process.env.ROOTTRACE_KEY,
    service: process.env.DEMO_SERVICE || 'checkout',
    version,
  });
}

function handleCheckout(res) {
  const cart = { items: [3, 14, 15, 92, 65, 35, 89, 79] };
  const total = applyDiscount(cart) + tax(cart);
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(renderReceipt(cart, total));
}

const server = http.createServer((req, res) => {
  if (req.url === '/checkout') return handleCheckout(res);
  res.writeHead(404);
  res.end();
});

server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  console.log(`checkout ${version} listening on ${server.address().port}`);
});

async function shutdown() {
  server.close();
  if (profiler) await profiler.stop();
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
