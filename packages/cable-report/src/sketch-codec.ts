// DDSketch to and from base64 protobuf: how every file of the project carries a histogram.
import { DDSketch } from "@artilleryio/sketches-js";
// The protobuf codec sketches-js itself decodes with (DDSketch.fromProto): the same bytes, read once.
import compiled from "@artilleryio/sketches-js/dist/ddsketch/proto/compiled";
import { quoteName, sketchProblem, TASK_FILE_LIMITS } from "./task-file.js";

/** Artillery creates every histogram with this accuracy (lib/core/ssms.ts); sketches only merge when it matches. */
export const RELATIVE_ACCURACY = 0.01;

const REFERENCE = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
/** Artillery's mapping as the protobuf carries it (interpolation 0: NONE, a LogarithmicMapping). */
const REFERENCE_MAPPING = { gamma: REFERENCE.mapping.gamma, indexOffset: (REFERENCE.mapping.toProto() as { indexOffset: number }).indexOffset, interpolation: 0 };
/** That mapping as the library rebuilds it from those bytes (its values differ from the original's in the last digits). */
const DECODED_MAPPING = DDSketch.fromProto(REFERENCE.toProto()).mapping;
/** Values whose keys tell two mappings apart: the same gamma with another offset or interpolation maps them elsewhere. */
const PROBES = [0.5, 1, 1_000];

export function encodeSketch(sketch: { toProto(): Uint8Array }): string {
  return Buffer.from(sketch.toProto()).toString("base64");
}

/**
 * Throws with the metric's name when the bytes are not a DDSketch protobuf, or not one the merge
 * can take safely (task-file.ts sketchProblem): a sketch comes from a task file, and bins far apart
 * would make a merge allocate every bin between them.
 */
export function decodeSketch(name: string, base64: string): DDSketch {
  if (base64.length > TASK_FILE_LIMITS.sketchBase64) throw new Error(`histogram ${quoteName(name)} is ${base64.length} characters long, more than a sketch can be`);
  let sketch: DDSketch;
  try {
    sketch = fromProto(Buffer.from(base64, "base64"));
  } catch (err) {
    throw new Error(`histogram ${quoteName(name)} is not a DDSketch protobuf (${(err as Error).message})`);
  }
  if (!REFERENCE.mergeable(sketch) || PROBES.some((v) => sketch.mapping.key(v) !== REFERENCE.mapping.key(v))) {
    throw new Error(`histogram ${quoteName(name)} was not made with relative accuracy ${RELATIVE_ACCURACY}, so it cannot be merged`);
  }
  const problem = sketchProblem(sketch);
  if (problem) throw new Error(`histogram ${quoteName(name)} ${problem}`);
  return sketch;
}

type ProtoStore = { contiguousBinCounts?: number[] | null; contiguousBinIndexOffset?: number | null } | null | undefined;
interface ProtoDDSketch {
  mapping?: { gamma?: number | null; indexOffset?: number | null; interpolation?: number | null } | null;
  positiveValues?: ProtoStore;
  negativeValues?: ProtoStore;
  zeroCount?: number | null;
  min?: number | null;
  max?: number | null;
  sum?: number | null;
}
// compiled.d.ts types the module as a bare protobufjs Root.
const ProtoSketch = (compiled as unknown as { DDSketch: { decode(bytes: Uint8Array): ProtoDDSketch } }).DDSketch;

/**
 * DDSketch.fromProto, fast where Artillery's sketches are concerned: their mapping is Artillery's
 * own, shared instead of built again from its gamma, and their bins are taken as a block instead of
 * added one by one (which grows and re-centres the store at every bin). A merge of 1,500 tasks'
 * 30 minutes decodes about a million sketches, and this was half of its time. Any other mapping is
 * decoded by the library, and refused by the caller as before.
 */
function fromProto(bytes: Uint8Array): DDSketch {
  const proto = ProtoSketch.decode(bytes);
  const mapping = proto.mapping;
  if (!mapping || mapping.gamma !== REFERENCE_MAPPING.gamma || mapping.indexOffset !== REFERENCE_MAPPING.indexOffset || (mapping.interpolation ?? 0) !== REFERENCE_MAPPING.interpolation) {
    return DDSketch.fromProto(bytes);
  }
  const sketch = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
  sketch.mapping = DECODED_MAPPING;
  sketch.store = storeFrom(proto.positiveValues, sketch.store);
  sketch.negativeStore = storeFrom(proto.negativeValues, sketch.negativeStore);
  sketch.zeroCount = proto.zeroCount ?? 0;
  sketch.count = sketch.store.count + sketch.negativeStore.count + sketch.zeroCount;
  sketch.min = proto.min ?? Infinity;
  sketch.max = proto.max ?? -Infinity;
  sketch.sum = proto.sum ?? 0;
  return sketch;
}

/** The store DenseStore.fromProto makes: every encoded bin from the offset on, zeros included, counted. */
function storeFrom(proto: ProtoStore, store: DDSketch["store"]): DDSketch["store"] {
  if (!proto || proto.contiguousBinCounts == null || proto.contiguousBinIndexOffset == null) throw new Error("Failed to decode store from protobuf");
  const bins = Array.from(proto.contiguousBinCounts);
  let count = 0;
  for (const n of bins) count += n;
  Object.assign(store, { bins, count, offset: proto.contiguousBinIndexOffset, minKey: bins.length > 0 ? proto.contiguousBinIndexOffset : Infinity, maxKey: bins.length > 0 ? proto.contiguousBinIndexOffset + bins.length - 1 : -Infinity });
  return store;
}
