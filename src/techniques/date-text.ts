// Reading and rewriting calendar dates in the textual forms payloads use (ISO date and datetime,
// DD/MM/YYYY and friends, YYYYMMDD), so a technique can change the date and write it back in the
// very same form. Day arithmetic is plain integers (no Date quirks with years below 100).

export interface CivilDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

/** A parsed date and how to write another date in the same textual form. */
export interface DateText extends CivilDate {
  /** Day and month written with two digits: only then does a rewrite keep the exact form both ways. */
  readonly padded: boolean;
  format(date: CivilDate): string;
}

type Order = 'ymd' | 'dmy' | 'mdy';

interface Layout {
  readonly re: RegExp;
  readonly order: Order | 'day-first';
}

// Groups: 1-3 are the date parts in the layout's order, then the separators, then what follows the
// date (ISO datetime time part), kept verbatim.
const ISO_TIME = '(?:[T ](?:[01]\\d|2[0-3]):[0-5]\\d(?::(?:[0-5]\\d|60)(?:[.,]\\d{1,9})?)?(?:Z|[+-](?:[01]\\d|2[0-3])(?::?[0-5]\\d)?)?)?';
const LAYOUTS: readonly Layout[] = [
  { re: new RegExp(`^(\\d{4})(-)(\\d{2})(-)(\\d{2})(${ISO_TIME})$`), order: 'ymd' },
  { re: /^(\d{4})([/.])(\d{1,2})(\2)(\d{1,2})()$/, order: 'ymd' },
  { re: /^(\d{4})()(\d{2})()(\d{2})()$/, order: 'ymd' },
  { re: /^(\d{1,2})([/.-])(\d{1,2})(\2)(\d{4})()$/, order: 'day-first' },
];

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

/**
 * Parses a date written in one of the supported forms; undefined when the text is no valid date.
 * `dayFirst` decides between DD/MM/YYYY (true) and MM/DD/YYYY (false) for the ambiguous form.
 */
export function parseDateText(text: string, dayFirst: boolean): DateText | undefined {
  for (const layout of LAYOUTS) {
    const m = layout.re.exec(text);
    if (m === null) continue;
    const order: Order = layout.order === 'day-first' ? (dayFirst ? 'dmy' : 'mdy') : layout.order;
    const [, a, sep1, b, sep2, c, rest] = m;
    const parts = { a, b, c };
    const pick = (which: 'y' | 'm' | 'd'): string => parts['abc'[order.indexOf(which)] as 'a' | 'b' | 'c'];
    const year = Number(pick('y'));
    const month = Number(pick('m'));
    const day = Number(pick('d'));
    if (!isValidDate(year, month, day)) return undefined;
    const widthM = pick('m').length;
    const widthD = pick('d').length;
    return {
      year,
      month,
      day,
      padded: widthM === 2 && widthD === 2,
      format(date) {
        const text = { y: pad(date.year, 4), m: pad(date.month, widthM), d: pad(date.day, widthD) };
        return text[order[0] as 'y'] + sep1 + text[order[1] as 'm'] + sep2 + text[order[2] as 'd'] + rest;
      },
    };
  }
  return undefined;
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  return month === 2 ? (isLeapYear(year) ? 29 : 28) : [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
}

export function isValidDate(year: number, month: number, day: number): boolean {
  return year >= 1 && year <= 9999 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function dayNumber(date: CivilDate): number {
  const y = date.month <= 2 ? date.year - 1 : date.year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (date.month + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + date.day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** The inverse of dayNumber. */
export function civilDate(days: number): CivilDate {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}
