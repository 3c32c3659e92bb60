// Documents more than one benchmark measures, built by one generator so their figures compare.

/** ~1 MB of JSON: records of 10 string/number fields, one of which (cardNumber) the manifests mask. */
export function oneMegabyteJsonDocument(): string {
  const records = [];
  for (let i = 0; records.length === 0 || JSON.stringify(records).length < 1_000_000; i++) {
    records.push({
      id: i,
      cardNumber: `4111 1111 ${String(1000 + (i % 9000))} ${String(1000 + ((i * 7) % 9000))}`,
      firstName: `First${i}`,
      lastName: `Last${i}`,
      city: 'Springfield',
      street: `${i} Evergreen Terrace`,
      active: i % 2 === 0,
      balance: i * 3.25,
      tier: ['gold', 'silver', 'bronze'][i % 3],
      created: '2024-01-01T00:00:00Z',
    });
  }
  return JSON.stringify({ records });
}
