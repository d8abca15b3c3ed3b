// XXH64 (seed 0), for the content checksum of zstd frames: fzstd does not verify it, the C++
// reader (libzstd) does, so the JS reader checks it here. BigInt arithmetic: images are small.
const P1 = 0x9e3779b185ebca87n, P2 = 0xc2b2ae3d27d4eb4fn, P3 = 0x165667b19e3779f9n;
const P4 = 0x85ebca77c2b2ae63n, P5 = 0x27d4eb2f165667c5n;
const M = 0xffffffffffffffffn;

const rotl = (x, r) => ((x << BigInt(r)) | (x >> BigInt(64 - r))) & M;
const round = (acc, input) => (rotl((acc + input * P2) & M, 31) * P1) & M;
const merge = (acc, val) => (((acc ^ round(0n, val)) * P1) & M) + P4 & M;

function read64(b, at) {
  const lo = (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
  const hi = (b[at + 4] | (b[at + 5] << 8) | (b[at + 6] << 16) | (b[at + 7] << 24)) >>> 0;
  return (BigInt(hi) << 32n) | BigInt(lo);
}
const read32 = (b, at) => BigInt((b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0);

export function xxh64(b) {
  const len = b.length;
  let at = 0, h;
  if (len >= 32) {
    let v1 = (P1 + P2) & M, v2 = P2, v3 = 0n, v4 = (0n - P1) & M;
    for (; at + 32 <= len; at += 32) {
      v1 = round(v1, read64(b, at));
      v2 = round(v2, read64(b, at + 8));
      v3 = round(v3, read64(b, at + 16));
      v4 = round(v4, read64(b, at + 24));
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) & M;
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = P5;
  }
  h = (h + BigInt(len)) & M;
  for (; at + 8 <= len; at += 8) h = ((rotl(h ^ round(0n, read64(b, at)), 27) * P1) & M) + P4 & M;
  if (at + 4 <= len) {
    h = ((rotl(h ^ ((read32(b, at) * P1) & M), 23) * P2) & M) + P3 & M;
    at += 4;
  }
  for (; at < len; at++) h = (rotl(h ^ ((BigInt(b[at]) * P5) & M), 11) * P1) & M;
  h ^= h >> 33n;
  h = (h * P2) & M;
  h ^= h >> 29n;
  h = (h * P3) & M;
  h ^= h >> 32n;
  return h;
}

// What a zstd frame stores: the low 4 bytes of XXH64, little-endian.
export const xxh64Low32 = (b) => Number(xxh64(b) & 0xffffffffn);
