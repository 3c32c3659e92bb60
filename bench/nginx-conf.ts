// nginx as a keep-alive pass-through reverse proxy, the baseline the proxy benchmarks compare with
// (bench/proxy.bench.ts, bench/peers.bench.ts): its config, written into a scratch folder.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Writes `dir`/nginx.conf (one worker, no access log, upstream keep-alive) and returns nginx's arguments. */
export function writeNginxPassThrough(dir: string, port: number, upstreamPort: number): string[] {
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`,
  );
  return ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')];
}
