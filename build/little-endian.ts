/** Typed arrays stored as little-endian BLOBs in the catalog (build/hash-index.ts, build/version-targets.ts). */

/** Whether this machine stores numbers little-endian (typed arrays use its order). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/** A typed array's bytes, little-endian whatever the machine's order. */
export function littleEndian(values: Uint16Array | Uint32Array): Buffer {
  const width = values.BYTES_PER_ELEMENT
  const out = Buffer.allocUnsafe(values.length * width)
  for (let i = 0; i < values.length; i++) {
    if (width === 2) out.writeUInt16LE(values[i]!, i * 2)
    else out.writeUInt32LE(values[i]!, i * 4)
  }
  return out
}

/** The numbers of a little-endian BLOB (a view of it when the machine's order and its alignment allow; else a copy). */
export function fromLittleEndian<T extends Uint16Array | Uint32Array>(bytes: Uint8Array, Type: { new (buffer: ArrayBuffer, offset: number, length: number): T; new (length: number): T; BYTES_PER_ELEMENT: number }): T {
  const width = Type.BYTES_PER_ELEMENT
  if (LITTLE_ENDIAN && bytes.byteOffset % width === 0) return new Type(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.length / width)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  const out = new Type(bytes.length / width)
  for (let i = 0; i < out.length; i++) out[i] = width === 2 ? view.getUint16(i * 2, true) : view.getUint32(i * 4, true)
  return out
}
