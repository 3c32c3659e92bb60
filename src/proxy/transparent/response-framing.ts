// Where the upstream's responses end on a relayed keep-alive connection (request-relay.ts), read
// from the bytes passing by and never changed. The relay needs one fact from it: "every request
// sent so far has its whole response", the only moment a connection may leave the relay for the
// full HTTP path without the two answering at once. Nothing is decided on what the upstream says;
// a response that cannot be framed (unusual head, close-delimited body) only makes that moment
// unknowable, and the relay then refuses a switch rather than risk one.
//
// Per RFC 9112 §6.3: no body after HEAD, 1xx, 204, 304; chunked when Transfer-Encoding ends in
// chunked; else Content-Length; else the body runs to the close. 1xx other than 101 are interim.
// Linear: every byte is looked at once; body bytes are skipped by count.

const MAX_HEAD = 64 * 1024;
const MAX_LINE = 4 * 1024;
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: |$)/;

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'until-close' | 'lost';

export class ResponseFraming {
  /** Outstanding requests, oldest first: true when its response has no body whatever it says (HEAD). */
  private readonly pending: boolean[] = [];
  private state: State = 'head';
  /** The head or line being read. */
  private line: Buffer[] = [];
  private lineBytes = 0;
  /** In `head`: where the current line starts in it. */
  private lineStart = 0;
  private lastByte: number | undefined;
  private left = 0;

  /** A request was sent upstream. */
  expect(method: string): void {
    this.pending.push(method === 'HEAD');
  }

  /** Every request sent has its whole response, and nothing else was received. */
  get idle(): boolean {
    return this.pending.length === 0 && this.state === 'head' && this.lineBytes === 0;
  }

  /** Where a response ends can no longer be known (an unreadable head, a 101, an unasked response). */
  get lost(): boolean {
    return this.state === 'lost';
  }

  /** The last response runs to the close: the relay can only know its end when the upstream closes. */
  get untilClose(): boolean {
    return this.state === 'until-close' && this.pending.length === 0;
  }

  feed(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length && this.state !== 'lost' && this.state !== 'until-close') {
      switch (this.state) {
        case 'length':
        case 'chunk-data': {
          const n = Math.min(this.left, chunk.length - i);
          i += n;
          this.left -= n;
          if (this.left === 0) this.state = this.state === 'length' ? 'head' : 'chunk-end';
          break;
        }
        default: {
          const lf = chunk.indexOf(0x0a, i);
          const end = lf === -1 ? chunk.length : lf + 1;
          this.line.push(chunk.subarray(i, end));
          this.lineBytes += end - i;
          const before = lf > i ? chunk[lf - 1] : this.lastByte;
          this.lastByte = chunk[end - 1];
          i = end;
          if (this.lineBytes > (this.state === 'head' ? MAX_HEAD : MAX_LINE)) this.state = 'lost';
          else if (lf !== -1) this.onLine(before);
        }
      }
    }
  }

  /**
   * A line ended (`before`: the byte before its LF). In `head`, lines gather until an empty one;
   * only then is the head read (one copy per head, not per line).
   */
  private onLine(before: number | undefined): void {
    if (this.state === 'head') {
      const length = this.lineBytes - this.lineStart;
      const empty = length === 1 || (length === 2 && before === 0x0d);
      if (!empty) {
        this.lineStart = this.lineBytes;
        return;
      }
      const text = Buffer.concat(this.line).toString('latin1');
      this.take();
      // Empty lines before a status line: tolerated by clients, nothing to frame.
      if (text.length > length) this.onHead(text);
      return;
    }
    const line = Buffer.concat(this.line).toString('latin1').replace(/\r?\n$/, '');
    this.take();
    switch (this.state) {
      case 'chunk-size': {
        const m = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/.exec(line);
        if (!m) return this.lose();
        this.left = parseInt(m[1], 16);
        this.state = this.left === 0 ? 'trailers' : 'chunk-data';
        return;
      }
      case 'chunk-end':
        if (line !== '') return this.lose();
        this.state = 'chunk-size';
        return;
      case 'trailers':
        if (line === '') this.state = 'head';
        return;
    }
  }

  private onHead(text: string): void {
    const lines = text.split(/\r?\n/);
    const status = STATUS_LINE.exec(lines[0]);
    if (!status || this.pending.length === 0) return this.lose();
    const code = Number(status[1]);
    if (code === 101) return this.lose(); // the connection is another protocol now
    if (code < 200) return; // interim: the final response follows
    const bodiless = this.pending.shift() === true || code === 204 || code === 304;
    let length: number | undefined;
    let chunked = false;
    let otherCoding = false;
    for (const header of lines.slice(1)) {
      const colon = header.indexOf(':');
      if (colon <= 0) continue;
      const name = header.slice(0, colon).trim().toLowerCase();
      const value = header.slice(colon + 1).trim();
      if (name === 'content-length') {
        if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value))) return this.lose();
        length = Number(value);
      } else if (name === 'transfer-encoding') {
        const last = value.split(',').at(-1)?.trim().toLowerCase();
        chunked = last === 'chunked';
        otherCoding = !chunked;
      }
    }
    if (bodiless) this.state = 'head';
    else if (chunked) this.state = 'chunk-size';
    else if (otherCoding) this.state = 'until-close';
    else if (length !== undefined) {
      this.left = length;
      this.state = length === 0 ? 'head' : 'length';
    } else this.state = 'until-close';
  }

  private take(): void {
    this.line = [];
    this.lineBytes = 0;
    this.lineStart = 0;
  }

  private lose(): void {
    this.state = 'lost';
  }
}
