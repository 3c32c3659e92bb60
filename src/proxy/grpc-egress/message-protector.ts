// Protects one protobuf message at the wire level. Three passes: read (find each field a rule or
// detection applies to, by the message's plan; ask Restrict whether it goes), protect (every value
// of one action in one applyBatch, like a JSON document), write (the original bytes with the
// changed values replaced and the lengths of the messages around them rewritten). Unknown fields,
// unselected fields, field order and a nested message whose length did not change keep their exact
// bytes; a message with nothing changed comes back as the same Buffer.
//
// Fields are selected as JSON keys are (the same resolver): by the .proto field name (compared
// case-insensitively, `_` and `-` ignored) or by path (`$.cards[0].card_number`); a rule on a
// message field covers every field beneath it; map values are named by their key, like JSON object
// members. Detection by content reads string fields only.

import { isUtf8 } from 'node:buffer';
import { isSafeName, WITHHELD } from '../../core/safe-name.ts';
import type { Scalar } from '../../core/types.ts';
import { innerAction, type FieldAction, type FieldResolver } from '../../formats/codec.ts';
import type { FieldPlan, MessagePlan } from './message-plan.ts';
import { checkPackedEnd, encodeNumeric, readNumeric, wireTypeOf, type NumericKind, type ScalarKind } from './scalars.ts';
import { lengthVarint, WireError, WireReader, WireType } from './wire.ts';

/** A selected field the message cannot carry protected: ends the call (FAILED_PRECONDITION). */
export class FieldTypeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldTypeError';
  }
}

/** What `removes` is asked about a message value: never empty, so Restrict removes it. */
const CONTAINER: unknown = Object.freeze({ container: true });
/** What `removes` is asked about a non-empty bytes value (its content is never handed out). */
const SOME_BYTES = '\u0000';

type Step = string | number;

/** A field whose value(s) an action protects. */
interface Slot {
  readonly type: 'slot';
  readonly start: number;
  readonly tagEnd: number;
  readonly end: number;
  readonly kind: 'string' | NumericKind;
  readonly action: FieldAction;
  readonly values: Scalar[];
  /** Packed runs: where each element starts (the last entry is the run's end); undefined otherwise. */
  readonly elementStarts: number[] | undefined;
  /** Packed runs: elements Restrict removes. */
  readonly removed: boolean[] | undefined;
  readonly trail: readonly Step[];
  readonly name: string;
  /** Index of the first value (repeated fields), for locations. */
  readonly index: number | undefined;
  out: Scalar[] | undefined;
  /** Set by `measure`: what the field is written as. */
  bytes?: Buffer[];
}

/** A nested message holding changes; its length is rewritten. */
interface Node {
  readonly type: 'node';
  readonly start: number;
  readonly tagEnd: number;
  readonly headerEnd: number;
  readonly end: number;
  readonly items: Item[];
  /** Set by `measure`: the new length prefix, or undefined when the length did not change. */
  header?: Buffer | undefined;
}

/** A field removed whole (Restrict). */
interface Drop {
  readonly type: 'drop';
  readonly start: number;
  readonly end: number;
}

type Item = Slot | Node | Drop;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function pathOf(trail: readonly Step[], last: string): string {
  let p = '$';
  for (const s of trail) p += typeof s === 'number' ? `[${s}]` : IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
  return IDENTIFIER.test(last) ? `${p}.${last}` : `${p}[${JSON.stringify(last)}]`;
}

/** A failure location: names that are not plain identifiers (map keys) are withheld. */
function locationOf(trail: readonly Step[], last: string, index: number | undefined): string {
  let p = '$';
  for (const s of trail) p += typeof s === 'number' ? `[${s}]` : isSafeName(s) ? `.${s}` : `[${WITHHELD}]`;
  p += isSafeName(last) ? `.${last}` : `[${WITHHELD}]`;
  return index === undefined ? p : `${p}[${index}]`;
}

class MessageReader {
  private readonly usesPaths: boolean;
  private readonly trail: Step[] = [];
  /** A copy of `trail` for the slots of one message (they share it); dropped when the trail moves. */
  private snapshot: readonly Step[] | undefined;
  readonly slots: Slot[] = [];
  /** Whether any field is removed whole (Restrict, a personal map key). */
  dropped = false;
  /** The field being read, for `location` (one function for all fields, no closure each). */
  private locName = '';
  private locIndex: number | undefined;
  private readonly location = (): string => locationOf(this.trail, this.locName, this.locIndex);

  constructor(
    private readonly buf: Buffer,
    private readonly resolver: FieldResolver,
    private readonly maxDepth: number,
  ) {
    this.usesPaths = resolver.usesPaths;
  }

  private push(step: Step): void {
    this.trail.push(step);
    this.snapshot = undefined;
  }

  private pop(): void {
    this.trail.pop();
    this.snapshot = undefined;
  }

  private trailCopy(): readonly Step[] {
    return (this.snapshot ??= this.trail.slice());
  }

  /** The items of the message in [start, end), in wire order. */
  message(start: number, end: number, plan: MessagePlan, inherited: FieldAction | undefined, depth: number): Item[] | undefined {
    if (depth > this.maxDepth) throw new WireError(`messages nested deeper than ${this.maxDepth} levels`);
    const r = new WireReader(this.buf, start, end);
    let items: Item[] | undefined;
    let counts: Map<number, number> | undefined;
    while (r.pos < end) {
      const fieldStart = r.pos;
      const tag = r.uint32();
      const n = tag >>> 3;
      const wt = tag & 7;
      if (n === 0) throw new WireError(`field number 0 at byte ${fieldStart}`);
      if (wt === WireType.EndGroup) throw new WireError(`end of group without its start at byte ${fieldStart}`);
      const field = plan.fields.get(n);
      if (field === undefined) {
        r.skip(wt, n, depth);
        continue;
      }
      let index: number | undefined;
      if (field.repeated) {
        counts ??= new Map();
        index = counts.get(n) ?? 0;
        counts.set(n, index + 1);
      }
      const own = this.resolver.resolve(field.name, this.usesPaths ? pathOf(this.trail, field.name) : undefined);
      const action = innerAction(own, inherited);
      const item = this.field(r, field, wt, fieldStart, action, index, depth);
      if (item !== undefined) {
        (items ??= []).push(item);
        if (item.type === 'drop') this.dropped = true;
      }
      if (field.repeated && item !== undefined && item.type === 'slot' && item.elementStarts !== undefined) {
        counts!.set(n, index! + item.values.length);
      }
    }
    return items;
  }

  private field(r: WireReader, field: FieldPlan, wt: number, fieldStart: number, action: FieldAction | undefined, index: number | undefined, depth: number): Item | undefined {
    const tagEnd = r.pos;
    const kind = field.kind;
    if (kind === 'message') {
      expectWire(field, wt, WireType.Len, fieldStart);
      const end = r.lenEnd();
      const headerEnd = r.pos;
      r.pos = end;
      if (action !== undefined && action.removes(CONTAINER, () => locationOf(this.trail, field.name, index))) return { type: 'drop', start: fieldStart, end };
      let items: Item[] | undefined;
      if (field.map) {
        const entry = this.mapEntry(headerEnd, end, field, action, depth + 1);
        if (entry === 'drop') return { type: 'drop', start: fieldStart, end };
        items = entry;
      } else {
        this.push(field.name);
        if (index !== undefined) this.push(index);
        items = this.message(headerEnd, end, field.message!, action, depth + 1);
        if (index !== undefined) this.pop();
        this.pop();
      }
      if (items === undefined) return undefined;
      return { type: 'node', start: fieldStart, tagEnd, headerEnd, end, items };
    }
    if (kind === 'group') {
      expectWire(field, wt, WireType.StartGroup, fieldStart);
      r.skip(wt, field.number, depth);
      if (action !== undefined && action.byContent !== true) throw new FieldTypeError(`${locationOf(this.trail, field.name, index)} is a group; groups cannot be protected`);
      return undefined;
    }
    if (field.packable && wt === WireType.Len) return this.packed(r, field, fieldStart, tagEnd, action, index);
    expectWire(field, wt, wireTypeOf(kind), fieldStart);
    return this.scalar(r, field.name, kind, fieldStart, tagEnd, action, index);
  }

  private scalar(r: WireReader, name: string, kind: ScalarKind, fieldStart: number, tagEnd: number, action: FieldAction | undefined, index: number | undefined): Item | undefined {
    // Detection by content reads strings only: other types hold no text to find values in.
    if (action === undefined || (action.byContent === true && kind !== 'string')) {
      r.skip(wireTypeOf(kind), 0, 0);
      return undefined;
    }
    this.locName = name;
    this.locIndex = index;
    const location = this.location;
    let value: Scalar;
    if (kind === 'string') {
      const end = r.lenEnd();
      value = decodeText(this.buf, r.pos, end, location);
      r.pos = end;
    } else if (kind === 'bytes' || kind === 'enum') {
      if (kind === 'bytes') {
        const end = r.lenEnd();
        value = end > r.pos ? SOME_BYTES : '';
        r.pos = end;
      } else value = readNumeric('int32', r);
      if (action.removes(value, location)) return { type: 'drop', start: fieldStart, end: r.pos };
      throw new FieldTypeError(`${location()} is of type ${kind}; a manifest rule applies to it but ${kind} fields cannot be protected (Restrict can remove them)`);
    } else {
      value = readNumeric(kind, r);
    }
    if (action.removes(value, location)) return { type: 'drop', start: fieldStart, end: r.pos };
    const slot: Slot = {
      type: 'slot', start: fieldStart, tagEnd, end: r.pos, kind, action, values: [value], elementStarts: undefined, removed: undefined,
      trail: this.trailCopy(), name, index, out: undefined,
    };
    this.slots.push(slot);
    return slot;
  }

  /** A packed run of repeated numerics (or enums): each element protected alone. */
  private packed(r: WireReader, field: FieldPlan, fieldStart: number, tagEnd: number, action: FieldAction | undefined, index: number | undefined): Item | undefined {
    const end = r.lenEnd();
    if (action === undefined || action.byContent === true) {
      // Still read: a run that does not end where its length says is malformed.
      const inner = new WireReader(this.buf, r.pos, end);
      const kind = field.kind === 'enum' ? 'int32' : (field.kind as NumericKind);
      while (inner.pos < end) readNumeric(kind, inner);
      checkPackedEnd(inner, end);
      r.pos = end;
      return undefined;
    }
    const inner = new WireReader(this.buf, r.pos, end);
    r.pos = end;
    const values: Scalar[] = [];
    const starts: number[] = [];
    const removed: boolean[] = [];
    const numeric = field.kind === 'enum' ? 'int32' : (field.kind as NumericKind);
    let kept = 0;
    while (inner.pos < end) {
      starts.push(inner.pos);
      const value = readNumeric(numeric, inner);
      const at = (index ?? 0) + values.length;
      const gone = action.removes(value, () => locationOf(this.trail, field.name, at));
      values.push(value);
      removed.push(gone);
      if (!gone) kept++;
    }
    checkPackedEnd(inner, end);
    starts.push(end);
    if (kept === 0) return { type: 'drop', start: fieldStart, end };
    if (field.kind === 'enum') throw new FieldTypeError(`${locationOf(this.trail, field.name, index)} is of type enum; a manifest rule applies to it but enum fields cannot be protected (Restrict can remove them)`);
    const slot: Slot = {
      type: 'slot', start: fieldStart, tagEnd, end, kind: numeric, action, values, elementStarts: starts, removed,
      trail: this.trailCopy(), name: field.name, index, out: undefined,
    };
    this.slots.push(slot);
    return slot;
  }

  /**
   * One map entry: its value is named by its key (a JSON member), under the map field's own action.
   * A value Restrict removes takes its entry with it ('drop').
   */
  private mapEntry(start: number, end: number, field: FieldPlan, mapAction: FieldAction | undefined, depth: number): Item[] | 'drop' | undefined {
    const map = field.map!;
    // The key may come after the value (any order is valid); the last one wins, as parsers read it.
    const r = new WireReader(this.buf, start, end);
    let key = '';
    while (r.pos < end) {
      const at = r.pos;
      const tag = r.uint32();
      const n = tag >>> 3;
      const wt = tag & 7;
      if (n === 0 || wt === WireType.EndGroup) throw new WireError(`malformed map entry at byte ${at}`);
      if (n !== 1) {
        r.skip(wt, n, depth);
        continue;
      }
      expectWire({ name: `${field.name} key`, kind: map.key }, wt, wireTypeOf(map.key), at);
      if (map.key === 'string') {
        const e = r.lenEnd();
        key = decodeText(this.buf, r.pos, e, () => locationOf(this.trail, field.name, undefined));
        r.pos = e;
      } else key = String(readNumeric(map.key as NumericKind, r));
    }
    this.push(field.name);
    try {
      const own = this.resolver.resolve(key, this.usesPaths ? pathOf(this.trail, key) : undefined);
      const action = innerAction(own, mapAction);
      const value: FieldPlan = { ...map.value, name: key };
      const v = new WireReader(this.buf, start, end);
      let items: Item[] | undefined;
      while (v.pos < end) {
        const fieldStart = v.pos;
        const tag = v.uint32();
        if (tag >>> 3 !== 2) {
          v.skip(tag & 7, tag >>> 3, depth);
          continue;
        }
        const item = this.field(v, value, tag & 7, fieldStart, action, undefined, depth);
        if (item === undefined) continue;
        if (item.type === 'drop') return 'drop';
        (items ??= []).push(item);
      }
      return items;
    } finally {
      this.pop();
    }
  }
}

function expectWire(field: { readonly name: string; readonly kind: string }, got: number, expected: number, at: number): void {
  if (got !== expected) throw new WireError(`field ${safeField(field.name)} (${field.kind}) has wire type ${got} at byte ${at}, its type is written with ${expected}`);
}

function safeField(name: string): string {
  return isSafeName(name) ? name : WITHHELD;
}

function decodeText(buf: Buffer, start: number, end: number, location: () => string): string {
  const text = buf.toString('utf8', start, end);
  // A replacement character is either sent as such or stands for invalid bytes: only then check.
  if (text.includes('\uFFFD') && !isUtf8(buf.subarray(start, end))) throw new WireError(`${location()} is not valid UTF-8`);
  return text;
}

/** Protects every slot: one applyBatch per action (FF1 then runs once per message, not once per value). */
function protectSlots(slots: readonly Slot[]): void {
  const byAction = new Map<FieldAction, Slot[]>();
  for (const s of slots) {
    const list = byAction.get(s.action);
    if (list) list.push(s);
    else byAction.set(s.action, [s]);
  }
  for (const [action, list] of byAction) {
    const values: Scalar[] = [];
    const owners: Slot[] = [];
    const offsets: number[] = [];
    for (const s of list) {
      for (let k = 0; k < s.values.length; k++) {
        if (s.removed?.[k] === true) continue;
        values.push(s.values[k]!);
        owners.push(s);
        offsets.push(k);
      }
      s.out = s.values.slice();
    }
    const out = values.length === 1 ? [action.apply(values[0]!, () => where(owners[0]!, offsets[0]!))] : action.applyBatch(values, (k) => where(owners[k]!, offsets[k]!));
    for (let k = 0; k < out.length; k++) owners[k]!.out![offsets[k]!] = out[k]!;
  }
}

function unchanged(slot: Slot): boolean {
  const out = slot.out!;
  for (let k = 0; k < out.length; k++) if (slot.removed?.[k] === true || !Object.is(out[k], slot.values[k])) return false;
  return true;
}

function where(slot: Slot, k: number): string {
  const index = slot.index === undefined ? undefined : slot.index + k;
  return locationOf(slot.trail, slot.name, index);
}

/**
 * The length of [from, to) once the items are applied. Nodes keep their new length prefix (none
 * when the length did not change), slots the bytes they write: `write` then copies without measuring.
 */
function measure(buf: Buffer, from: number, to: number, items: readonly Item[]): number {
  let length = to - from;
  for (const item of items) {
    length -= item.end - item.start;
    if (item.type === 'drop') continue;
    if (item.type === 'node') {
      const inner = measure(buf, item.headerEnd, item.end, item.items);
      item.header = inner === item.end - item.headerEnd ? undefined : lengthVarint(inner);
      length += (item.header === undefined ? item.headerEnd - item.start : item.tagEnd - item.start + item.header.length) + inner;
    } else {
      item.bytes = [];
      length += renderSlot(buf, item, item.bytes);
    }
  }
  return length;
}

/** Writes [from, to) with the items applied (measured first) into `target` at `at`; returns where it ended. */
function write(target: Buffer, at: number, buf: Buffer, from: number, to: number, items: readonly Item[]): number {
  let cursor = from;
  for (const item of items) {
    at += buf.copy(target, at, cursor, item.start);
    cursor = item.end;
    if (item.type === 'drop') continue;
    if (item.type === 'node') {
      if (item.header === undefined) at += buf.copy(target, at, item.start, item.headerEnd);
      else {
        at += buf.copy(target, at, item.start, item.tagEnd);
        at += item.header.copy(target, at);
      }
      at = write(target, at, buf, item.headerEnd, item.end, item.items);
    } else for (const chunk of item.bytes!) at += chunk.copy(target, at);
  }
  return at + buf.copy(target, at, cursor, to);
}

function renderSlot(buf: Buffer, slot: Slot, chunks: Buffer[]): number {
  const out = slot.out!;
  const tag = buf.subarray(slot.start, slot.tagEnd);
  if (slot.elementStarts === undefined) {
    const value = out[0]!;
    if (Object.is(value, slot.values[0])) {
      chunks.push(buf.subarray(slot.start, slot.end));
      return slot.end - slot.start;
    }
    // A protected value that comes back null (no value) leaves the field out: proto3's "not set".
    if (value === null) return 0;
    const bytes = slot.kind === 'string' ? Buffer.from(String(value), 'utf8') : encodeNumeric(slot.kind, value);
    if (bytes === undefined) throw cannotHold(slot, 0);
    const prefix = slot.kind === 'string' ? lengthVarint(bytes.length) : undefined;
    chunks.push(tag);
    if (prefix) chunks.push(prefix);
    chunks.push(bytes);
    return tag.length + (prefix?.length ?? 0) + bytes.length;
  }
  const parts: Buffer[] = [];
  let size = 0;
  let same = true;
  for (let k = 0; k < out.length; k++) {
    if (slot.removed![k]) {
      same = false;
      continue;
    }
    let bytes: Buffer | undefined;
    if (Object.is(out[k], slot.values[k])) bytes = buf.subarray(slot.elementStarts[k]!, slot.elementStarts[k + 1]!);
    else {
      same = false;
      bytes = out[k] === null ? undefined : encodeNumeric(slot.kind as NumericKind, out[k]!);
      if (bytes === undefined) throw cannotHold(slot, k);
    }
    parts.push(bytes);
    size += bytes.length;
  }
  if (same) {
    chunks.push(buf.subarray(slot.start, slot.end));
    return slot.end - slot.start;
  }
  const prefix = lengthVarint(size);
  chunks.push(tag, prefix, ...parts);
  return tag.length + prefix.length + size;
}

function cannotHold(slot: Slot, k: number): FieldTypeError {
  return new FieldTypeError(`${where(slot, k)} is of type ${slot.kind} and cannot hold its protected value (the technique gives another type)`);
}

/**
 * The message with its selected fields protected. Throws WireError for bytes that are not a message
 * of the plan's type (nesting beyond `maxDepth` included) and FieldTypeError for a selected field
 * that cannot carry its protected value; the engine records failed values (PreparedJob.check).
 */
export function protectMessage(buf: Buffer, plan: MessagePlan, resolver: FieldResolver, maxDepth: number): Buffer {
  const reader = new MessageReader(buf, resolver, maxDepth);
  const items = reader.message(0, buf.length, plan, undefined, 1);
  if (items === undefined) return buf;
  protectSlots(reader.slots);
  // Detection read strings and found nothing: the very same bytes go on (a compressed message too).
  if (!reader.dropped && reader.slots.every(unchanged)) return buf;
  const out = Buffer.allocUnsafe(measure(buf, 0, buf.length, items));
  // Every byte of the unzeroed buffer is written, or the message is not sent at all.
  if (write(out, 0, buf, 0, buf.length, items) !== out.length) throw new Error('protected message length mismatch');
  return out;
}

