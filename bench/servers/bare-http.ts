/**
 * Reference 1: a bare node:http server answering every request with the same bytes (a real Remit
 * response body captured by the bench, BODY_FILE) as application/json. The ceiling for this machine,
 * this Node and this response size.
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { listenAddress, stopOn } from './lifecycle.ts';

const bodyFile = process.env.BODY_FILE;
if (!bodyFile) throw new Error('BODY_FILE must name the file holding the response body');
const body = readFileSync(bodyFile);
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) };

const server = http.createServer((_request, response) => {
  response.writeHead(200, headers);
  response.end(body);
});

stopOn(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
);

const { port, host } = listenAddress();
server.listen(port, host);
