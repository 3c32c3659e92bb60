// A message type as the protector walks it, compiled once from protobufjs reflection: field number →
// name, type and shape. Nothing else of protobufjs is used per message (it decodes into objects and
// re-encodes, which loses unknown fields and byte order; the protector works on the wire bytes).

import type * as Protobuf from 'protobufjs';
import { isNumericKind, type ScalarKind } from './scalars.ts';

export type FieldKind = ScalarKind | 'message' | 'group';

export interface FieldPlan {
  readonly number: number;
  /** The field's name as the .proto file writes it (manifests select it like a JSON key). */
  readonly name: string;
  readonly kind: FieldKind;
  readonly repeated: boolean;
  /** Repeated numerics: proto3 writes them packed, proto2 one by one; readers must take both. */
  readonly packable: boolean;
  /** The message type of a `message` field (or of a map's entries). */
  message: MessagePlan | undefined;
  /** A map field: its entries' key kind and value field (number 2); values are named by their key. */
  readonly map: { readonly key: ScalarKind; readonly value: FieldPlan } | undefined;
}

export interface MessagePlan {
  /** Fully qualified, without the leading dot (`shop.v1.Customer`). */
  readonly fullName: string;
  readonly fields: ReadonlyMap<number, FieldPlan>;
}

/** Compiles the plans of a type and every type reachable from it (cycles share one plan). */
export function messagePlan(type: Protobuf.Type, lib: typeof Protobuf, seen: Map<Protobuf.Type, MessagePlan> = new Map()): MessagePlan {
  const known = seen.get(type);
  if (known) return known;
  const fields = new Map<number, FieldPlan>();
  const plan: MessagePlan = { fullName: type.fullName.replace(/^\./, ''), fields };
  seen.set(type, plan);
  for (const f of type.fieldsArray) fields.set(f.id, fieldPlan(f, type, lib, seen));
  return plan;
}

function fieldPlan(f: Protobuf.Field, parent: Protobuf.Type, lib: typeof Protobuf, seen: Map<Protobuf.Type, MessagePlan>): FieldPlan {
  f.resolve();
  const resolved = f.resolvedType;
  if (f instanceof lib.MapField) {
    const value = valueField(2, 'value', f.type, resolved, lib, seen);
    return { number: f.id, name: f.name, kind: 'message', repeated: true, packable: false, message: undefined, map: { key: f.keyType as ScalarKind, value } };
  }
  if (resolved instanceof lib.Type) {
    const entry = mapEntryOf(f, resolved, parent);
    if (entry) {
      const value = valueField(2, 'value', entry.value.type, entry.value.resolvedType, lib, seen);
      return { number: f.id, name: f.name, kind: 'message', repeated: true, packable: false, message: undefined, map: { key: entry.key.type as ScalarKind, value } };
    }
    const group = f.delimited === true || (resolved as Protobuf.Type & { group?: boolean }).group === true;
    return { number: f.id, name: f.name, kind: group ? 'group' : 'message', repeated: f.repeated, packable: false, message: messagePlan(resolved, lib, seen), map: undefined };
  }
  const kind: ScalarKind = resolved instanceof lib.Enum ? 'enum' : (f.type as ScalarKind);
  return { number: f.id, name: f.name, kind, repeated: f.repeated, packable: f.repeated && (isNumericKind(kind) || kind === 'enum'), message: undefined, map: undefined };
}

function valueField(
  number: number,
  name: string,
  type: string,
  resolved: Protobuf.Type | Protobuf.Enum | null,
  lib: typeof Protobuf,
  seen: Map<Protobuf.Type, MessagePlan>,
): FieldPlan {
  if (resolved instanceof lib.Type) return { number, name, kind: 'message', repeated: false, packable: false, message: messagePlan(resolved, lib, seen), map: undefined };
  const kind: ScalarKind = resolved instanceof lib.Enum ? 'enum' : (type as ScalarKind);
  return { number, name, kind, repeated: false, packable: false, message: undefined, map: undefined };
}

/**
 * A map field read from a descriptor set arrives as a repeated `XxxEntry` message nested in the
 * field's type (protobufjs sets the map_entry option on the wrong type when converting): told by its
 * shape — a nested type named after the field, with exactly `key = 1` and `value = 2`. (Taken for
 * a plain repeated message, it would still be read right: only the names values go by differ.)
 */
function mapEntryOf(f: Protobuf.Field, type: Protobuf.Type, parent: Protobuf.Type): { key: Protobuf.Field; value: Protobuf.Field } | undefined {
  if (!f.repeated || type.parent !== parent) return undefined;
  const fields = type.fieldsArray;
  if (fields.length !== 2) return undefined;
  const key = type.fieldsById[1];
  const value = type.fieldsById[2];
  if (!key || !value || key.name !== 'key' || value.name !== 'value' || key.repeated || value.repeated) return undefined;
  // protoc names it `CardsByIdEntry` for `cards_by_id`; protobufjs's own descriptors `Cards_by_id`.
  const bare = (name: string): string => name.replace(/_/g, '').toLowerCase();
  return bare(type.name.replace(/Entry$/, '')) === bare(f.name) ? { key, value } : undefined;
}
