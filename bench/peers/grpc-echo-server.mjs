// A gRPC upstream for bench/grpc-route.bench.ts, in its own process: answers partner.v1.Customers/Put
// with the message it got. Arguments: proto file, certificate PEM file, key PEM file. Prints its port.
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const [proto, cert, key] = process.argv.slice(2);
const Customers = grpc.loadPackageDefinition(protoLoader.loadSync(proto, { keepCase: true, longs: String })).partner.v1.Customers;
const server = new grpc.Server();
server.addService(Customers.service, { Put: (call, cb) => cb(null, call.request) });
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createSsl(null, [{ cert_chain: readFileSync(cert), private_key: readFileSync(key) }]), (err, port) => {
  if (err) throw err;
  console.log(port);
});
