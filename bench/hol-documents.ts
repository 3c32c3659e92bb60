// The head-of-line benches' heavy documents (bench/head-of-line.bench.ts, bench/hol-profile.ts): a
// SQL script of INSERTs, a JSON array of records and an XML document, each about the size asked,
// every record holding a name, an e-mail address and a card number, and the /api/protect envelope
// (Mask on the `customer` manifest) that carries one.

const MiB = 1024 * 1024;

export function sqlScript(bytes: number): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const s = `INSERT INTO customers (id, name, email, cardNumber, city) VALUES (${i}, 'Customer ${i}', 'c${i}@example.com', '4111 1111 1111 ${String(i % 10000).padStart(4, '0')}', 'Springfield');`;
    parts.push(s);
    n += s.length + 1;
  }
  return parts.join('\n');
}

export function jsonDocument(bytes: number): string {
  const records: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const r = JSON.stringify({ id: i, name: `Customer ${i}`, email: `c${i}@example.com`, cardNumber: '4111 1111 1111 1111', city: 'Springfield', balance: i * 3.25 });
    records.push(r);
    n += r.length + 1;
  }
  return `{"customers":[${records.join(',')}]}`;
}

export function xmlDocument(bytes: number): string {
  const parts = ['<customers>'];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const r = `<customer id="${i}"><name>Customer ${i}</name><email>c${i}@example.com</email><cardNumber>4111 1111 1111 1111</cardNumber><city>Springfield</city></customer>\n`;
    parts.push(r);
    n += r.length;
  }
  parts.push('</customers>');
  return parts.join('');
}

/** 5 MB of SQL, 10 MB of JSON and 10 MB of XML, times `scale`. */
export const heavyDocuments = (scale: number) =>
  [
    { type: 'SQL', dataSet: sqlScript(5 * MiB * scale) },
    { type: 'JSON', dataSet: jsonDocument(10 * MiB * scale) },
    { type: 'XML', dataSet: xmlDocument(10 * MiB * scale) },
  ] as const;

/** The /api/protect body for one document: Mask on the `customer` manifest. */
export const envelopeOf = (h: { type: string; dataSet: string }): string => JSON.stringify({ manifestName: 'customer', jobType: 'Mask', dataSet: h.dataSet });
