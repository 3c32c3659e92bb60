// A Node.js client of the gateway: fetch for the HTTP API, @grpc/grpc-js for ProtectValues.
// Gets a token, protects one JSON, XML and SQL document, uploads a CSV, and protects table rows
// over gRPC. Prints one line per call: the step, then what the gateway answered (protected data).
//
//   npm install @grpc/grpc-js @grpc/proto-loader      # Node 20 or later; in this repo: npm ci
//   node examples/clients/node/client.mjs
//
// Settings (environment): DPG_URL (http://127.0.0.1:8080), DPG_GRPC (127.0.0.1:9090),
// DPG_API_KEY, DPG_CLIENT_ID, DPG_CLIENT_SECRET (the demo credentials of config/gateway.yaml),
// DPG_PROTO (proto/gateway.proto of this repo).

import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const URL_BASE = process.env.DPG_URL ?? 'http://127.0.0.1:8080';
const GRPC_ADDR = process.env.DPG_GRPC ?? '127.0.0.1:9090';
const API_KEY = process.env.DPG_API_KEY ?? 'demo-api-key';
const CLIENT_ID = process.env.DPG_CLIENT_ID ?? 'demo-client';
const CLIENT_SECRET = process.env.DPG_CLIENT_SECRET ?? 'demo-secret';
const PROTO = process.env.DPG_PROTO ?? fileURLToPath(new URL('../../../proto/gateway.proto', import.meta.url));

const CARD = '4111 1111 1111 1111';

/** A failed call ends the program: the problem+json `code` and `detail` say why (never a value). */
async function ok(res, step) {
  if (res.ok) return res;
  const text = await res.text();
  throw new Error(`${step}: HTTP ${res.status} ${text}`);
}

async function token() {
  const res = await fetch(`${URL_BASE}/gateway/identity/v1/token`, {
    method: 'POST',
    headers: { 'X-Api-Key': API_KEY },
    // URLSearchParams is sent as application/x-www-form-urlencoded.
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
  });
  return (await (await ok(res, 'token')).json()).access_token;
}

async function protect(accessToken, dataSetType, dataSet) {
  const res = await fetch(`${URL_BASE}/api/protect`, {
    method: 'POST',
    headers: { 'X-Resource-Token': accessToken, 'Content-Type': 'application/json', 'X-Data-Set-Type': dataSetType },
    body: JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet }),
  });
  const body = await (await ok(res, `protect ${dataSetType}`)).json();
  return typeof body.dataSet === 'string' ? body.dataSet : JSON.stringify(body.dataSet);
}

async function protectFile(accessToken) {
  const form = new FormData();
  // The metadata part first, then the file.
  form.append('protectFileDataset', new Blob([JSON.stringify({ manifestName: 'customer', jobType: 'Mask' })], { type: 'application/json' }));
  form.append('file', new Blob([`name,cardNumber\nJane Doe,${CARD}\n`], { type: 'text/csv' }), 'customers.csv');
  const res = await fetch(`${URL_BASE}/file/protect`, { method: 'POST', headers: { 'X-Resource-Token': accessToken }, body: form });
  return (await (await ok(res, 'file')).text()).trim().replace(/\r?\n/g, ' | ');
}

function protectValues(accessToken) {
  const definition = protoLoader.loadSync(PROTO, { keepCase: true, defaults: true, oneofs: true });
  const { ProtectService } = grpc.loadPackageDefinition(definition).com.vendor.gateway;
  const client = new ProtectService(GRPC_ADDR, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${accessToken}`);
  const request = {
    job_config: { configuration_name: 'customer', job_type: 'Mask' },
    labels: ['name', 'cardNumber'],
    rows: [{ columns: [{ string_value: 'Jane Doe' }, { string_value: CARD }] }],
  };
  return new Promise((resolve, reject) => {
    client.ProtectValues(request, metadata, (err, response) => {
      client.close();
      if (err) return reject(new Error(`grpc: ${err.code} ${err.details}`));
      resolve(response.rows.map((r) => r.columns.map((c) => c.string_value).join(',')).join(' | '));
    });
  });
}

const accessToken = await token();
console.log('token ok');
console.log(`json ${await protect(accessToken, 'JSON', { name: 'Jane Doe', cardNumber: CARD })}`);
console.log(`xml ${await protect(accessToken, 'XML', `<customer><name>Jane Doe</name><cardNumber>${CARD}</cardNumber></customer>`)}`);
console.log(`sql ${await protect(accessToken, 'SQL', `INSERT INTO customers (name, cardNumber) VALUES ('Jane Doe', '${CARD}')`)}`);
console.log(`csv ${await protectFile(accessToken)}`);
console.log(`grpc ${await protectValues(accessToken)}`);
