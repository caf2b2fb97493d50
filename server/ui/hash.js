/* hash.js — the ring's hash functions (SPEC section 2: fnv1a_32, md5_32, xxh3_64 with seed 0; MD5
 * also places ketama's points, section 8), so the console can build a ring from its version
 * document and show every arc of it. JavaScript has no 64-bit integer but BigInt, which is far too
 * slow for millions of points, so 64-bit values are pairs of 32-bit words (high, low); the helpers
 * leave their result in R[0] and R[1] instead of allocating. tests/console/test_ring.js checks every
 * function against the golden vectors, and the console checks each ring's fingerprint against the
 * server's. */
"use strict";

const rkHash = (() => {
  const TWO32 = 4294967296;
  const R = new Uint32Array(2); /* the last 64-bit result: high word, low word; a typed array, as
                                 * numbers over 2^30 kept in variables would be allocated */

  /* a * b of two 32-bit words, all 64 bits. */
  function mul32(a, b) {
    R[1] = Math.imul(a, b) >>> 0;
    R[0] = mulHigh(a, b);
  }

  /* The low 64 bits of (ah:al) * (bh:bl). */
  function mul64(ah, al, bh, bl) {
    mul32(al, bl);
    R[0] = (R[0] + Math.imul(al, bh) + Math.imul(ah, bl)) >>> 0;
  }

  function add64(ah, al, bh, bl) {
    R[1] = (al + bl) >>> 0;
    R[0] = (ah + bh + (R[1] < al ? 1 : 0)) >>> 0;
  }

  /* The high word of a * b for two 32-bit words (the low one is Math.imul). */
  function mulHigh(a, b) {
    const a0 = a & 0xffff, a1 = a >>> 16, b0 = b & 0xffff, b1 = b >>> 16;
    const m1 = a1 * b0, m2 = a0 * b1, mid = ((a0 * b0) >>> 16) + (m1 & 0xffff) + (m2 & 0xffff);
    return (a1 * b1 + (m1 >>> 16) + (m2 >>> 16) + (mid >>> 16)) >>> 0;
  }

  /* The 128-bit product of two 64-bit values, its two halves xored (XXH3_mul128_fold64): the
   * hottest function of a ring build, so the four partial products stay in locals. */
  function fold64(ah, al, bh, bl) {
    const p0l = Math.imul(al, bl) >>> 0, p1l = Math.imul(al, bh) >>> 0, p2l = Math.imul(ah, bl) >>> 0, p3l = Math.imul(ah, bh) >>> 0;
    const s1 = mulHigh(al, bl) + p1l + p2l, s2 = mulHigh(al, bh) + mulHigh(ah, bl) + p3l + Math.floor(s1 / TWO32);
    const w3 = (mulHigh(ah, bh) + Math.floor(s2 / TWO32)) >>> 0;
    R[0] = (s1 ^ w3) >>> 0;
    R[1] = (p0l ^ s2) >>> 0;
  }

  /* h ^= h >> s for 0 < s < 64. */
  function xorShift(h, l, s) {
    R[1] = (l ^ (s < 32 ? (l >>> s) | (h << (32 - s)) : h >>> (s - 32))) >>> 0;
    R[0] = (h ^ (s < 32 ? h >>> s : 0)) >>> 0;
  }

  const SECRET = new Uint8Array([ /* XXH3_kSecret of libxxhash's xxhash.h: the default secret */
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
  ]);
  const P32_1 = 0x9e3779b1, P64_1 = [0x9e3779b1, 0x85ebca87], P64_2 = [0xc2b2ae3d, 0x27d4eb4f];
  const P64_3 = [0x165667b1, 0x9e3779f9], MX1 = [0x16566791, 0x9e3779f9], MX2 = [0x9fb21c65, 0x1e98df25];

  function le32(b, o) {
    return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
  }

  /* the secret's words that short keys use, xored in pairs as XXH3 combines them */
  const S24 = (le32(SECRET, 24) ^ le32(SECRET, 32)) >>> 0, S28 = (le32(SECRET, 28) ^ le32(SECRET, 36)) >>> 0;
  const S40 = (le32(SECRET, 40) ^ le32(SECRET, 48)) >>> 0, S44 = (le32(SECRET, 44) ^ le32(SECRET, 52)) >>> 0;

  function avalanche(h, l) { /* XXH3_avalanche */
    xorShift(h, l, 37);
    mul64(R[0], R[1], MX1[0], MX1[1]);
    xorShift(R[0], R[1], 32);
  }

  function avalanche64(h, l) { /* XXH64_avalanche */
    xorShift(h, l, 33);
    mul64(R[0], R[1], P64_2[0], P64_2[1]);
    xorShift(R[0], R[1], 29);
    mul64(R[0], R[1], P64_3[0], P64_3[1]);
    xorShift(R[0], R[1], 32);
  }

  function read64(b, o) {
    R[0] = le32(b, o + 4);
    R[1] = le32(b, o);
  }

  function bswap(x) {
    return ((x >>> 24) | ((x >>> 8) & 0xff00) | ((x << 8) & 0xff0000) | (x << 24)) >>> 0;
  }

  /* XXH3_mix16B with seed 0: 16 input bytes at o against 16 secret bytes at s. */
  function mix16(b, o, s) {
    read64(b, o);
    const ah = (R[0] ^ le32(SECRET, s + 4)) >>> 0, al = (R[1] ^ le32(SECRET, s)) >>> 0;
    read64(b, o + 8);
    fold64(ah, al, (R[0] ^ le32(SECRET, s + 12)) >>> 0, (R[1] ^ le32(SECRET, s + 8)) >>> 0);
  }

  /* acc (an array of 2 words) += the last 64-bit result. */
  function accumulate(acc, i) {
    add64(acc[i], acc[i + 1], R[0], R[1]);
    acc[i] = R[0], acc[i + 1] = R[1];
  }

  function upTo3(b, o, n) {
    const combined = ((b[o] << 16) | (b[o + (n >> 1)] << 24) | b[o + n - 1] | (n << 8)) >>> 0;
    avalanche64(0, (combined ^ le32(SECRET, 0) ^ le32(SECRET, 4)) >>> 0);
  }

  function upTo8(b, o, n) { /* XXH3_rrmxmx of the two words against the secret */
    const h = (le32(b, o) ^ le32(SECRET, 12) ^ le32(SECRET, 20)) >>> 0;
    const l = (le32(b, o + n - 4) ^ le32(SECRET, 8) ^ le32(SECRET, 16)) >>> 0;
    const r49h = (l << 17) | (h >>> 15), r49l = (h << 17) | (l >>> 15); /* rotl 49 */
    const r24h = (h << 24) | (l >>> 8), r24l = (l << 24) | (h >>> 8); /* rotl 24 */
    mul64((h ^ r49h ^ r24h) >>> 0, (l ^ r49l ^ r24l) >>> 0, MX2[0], MX2[1]);
    const mh = R[0], ml = R[1];
    add64(0, mh >>> 3, 0, n); /* (h >> 35) + len */
    mul64((mh ^ R[0]) >>> 0, (ml ^ R[1]) >>> 0, MX2[0], MX2[1]);
    xorShift(R[0], R[1], 28);
  }

  function upTo16(b, o, n) {
    read64(b, o);
    const ih = (R[0] ^ S28) >>> 0, il = (R[1] ^ S24) >>> 0;
    read64(b, o + n - 8);
    const jh = (R[0] ^ S44) >>> 0, jl = (R[1] ^ S40) >>> 0;
    add64(bswap(il), bswap(ih), jh, jl);
    const sh = R[0], sl = R[1];
    fold64(ih, il, jh, jl);
    add64(sh, sl, R[0], R[1]);
    add64(R[0], R[1], 0, n);
    avalanche(R[0], R[1]);
  }

  function upTo128(b, o, n) {
    mul64(0, n, P64_1[0], P64_1[1]);
    const acc = [R[0], R[1]];
    for (let k = 0, s = 0; k < 4 && (k === 0 || n > 32 * k); k++, s += 32) {
      mix16(b, o + 16 * k, s);
      accumulate(acc, 0);
      mix16(b, o + n - 16 * (k + 1), s + 16);
      accumulate(acc, 0);
    }
    avalanche(acc[0], acc[1]);
  }

  function upTo240(b, o, n) {
    mul64(0, n, P64_1[0], P64_1[1]);
    const acc = [R[0], R[1]];
    for (let k = 0; k < 8; k++) {
      mix16(b, o + 16 * k, 16 * k);
      accumulate(acc, 0);
    }
    avalanche(acc[0], acc[1]);
    acc[0] = R[0], acc[1] = R[1];
    for (let k = 8; k < n >> 4; k++) {
      mix16(b, o + 16 * k, 16 * (k - 8) + 3);
      accumulate(acc, 0);
    }
    mix16(b, o + n - 16, 136 - 17);
    accumulate(acc, 0);
    avalanche(acc[0], acc[1]);
  }

  /* XXH3_accumulate_512: one 64-byte stripe at o against the secret at s. */
  function stripe(acc, b, o, s) {
    for (let i = 0; i < 8; i++) {
      const dh = le32(b, o + 8 * i + 4), dl = le32(b, o + 8 * i);
      add64(acc[2 * (i ^ 1)], acc[2 * (i ^ 1) + 1], dh, dl);
      acc[2 * (i ^ 1)] = R[0], acc[2 * (i ^ 1) + 1] = R[1];
      mul32((dl ^ le32(SECRET, s + 8 * i)) >>> 0, (dh ^ le32(SECRET, s + 8 * i + 4)) >>> 0);
      accumulate(acc, 2 * i);
    }
  }

  function scramble(acc) {
    for (let i = 0; i < 8; i++) {
      xorShift(acc[2 * i], acc[2 * i + 1], 47);
      mul64((R[0] ^ le32(SECRET, 128 + 8 * i + 4)) >>> 0, (R[1] ^ le32(SECRET, 128 + 8 * i)) >>> 0, 0, P32_1);
      acc[2 * i] = R[0], acc[2 * i + 1] = R[1];
    }
  }

  /* Inputs over 240 bytes: 1024-byte blocks of 16 stripes, then the stripes left and the last. */
  function long(b, o, n) {
    /* XXH3_INIT_ACC: eight primes as (high, low) words */
    const acc = new Uint32Array([0, 0xc2b2ae3d, ...P64_1, ...P64_2, ...P64_3, 0x85ebca77, 0xc2b2ae63,
      0, 0x85ebca77, 0x27d4eb2f, 0x165667c5, 0, P32_1]);
    const blocks = Math.floor((n - 1) / 1024);
    for (let k = 0; k < blocks; k++) {
      for (let j = 0; j < 16; j++) stripe(acc, b, o + 1024 * k + 64 * j, 8 * j);
      scramble(acc);
    }
    const stripes = Math.floor((n - 1 - 1024 * blocks) / 64);
    for (let j = 0; j < stripes; j++) stripe(acc, b, o + 1024 * blocks + 64 * j, 8 * j);
    stripe(acc, b, o + n - 64, 192 - 64 - 7);
    mul64(0, n, P64_1[0], P64_1[1]);
    const out = [R[0], R[1]];
    for (let i = 0; i < 4; i++) {
      const ah = (acc[4 * i] ^ le32(SECRET, 11 + 16 * i + 4)) >>> 0, al = (acc[4 * i + 1] ^ le32(SECRET, 11 + 16 * i)) >>> 0;
      fold64(ah, al, (acc[4 * i + 2] ^ le32(SECRET, 11 + 16 * i + 12)) >>> 0, (acc[4 * i + 3] ^ le32(SECRET, 11 + 16 * i + 8)) >>> 0);
      accumulate(out, 0);
    }
    avalanche(out[0], out[1]);
  }

  /* XXH3 64-bit, seed 0, of n bytes of b from 0 into hi[k], lo[k]. */
  function xxh3_64(b, n, hi, lo, k) {
    if (n === 0) avalanche64((le32(SECRET, 60) ^ le32(SECRET, 68)) >>> 0, (le32(SECRET, 56) ^ le32(SECRET, 64)) >>> 0);
    else if (n <= 3) upTo3(b, 0, n);
    else if (n <= 8) upTo8(b, 0, n);
    else if (n <= 16) upTo16(b, 0, n);
    else if (n <= 128) upTo128(b, 0, n);
    else if (n <= 240) upTo240(b, 0, n);
    else long(b, 0, n);
    hi[k] = R[0], lo[k] = R[1];
  }

  function fnv1a_32(b, n, hi, lo, k) {
    let h = 2166136261;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ b[i], 16777619);
    hi[k] = 0, lo[k] = h >>> 0;
  }

  const MD5_K = Uint32Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * TWO32));
  const MD5_S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
  const md5Words = new Uint32Array(4), md5Block = new Uint32Array(16);
  let md5Pad = new Uint8Array(64);

  function md5Round(m) {
    let [a, b, c, d] = md5Words;
    for (let i = 0; i < 64; i++) {
      const r = i >> 4;
      const f = r === 0 ? (b & c) | (~b & d) : r === 1 ? (d & b) | (~d & c) : r === 2 ? b ^ c ^ d : c ^ (b | ~d);
      const g = r === 0 ? i : r === 1 ? (5 * i + 1) & 15 : r === 2 ? (3 * i + 5) & 15 : (7 * i) & 15;
      const t = (f + a + MD5_K[i] + m[g]) | 0, s = MD5_S[4 * r + (i & 3)];
      a = d, d = c, c = b;
      b = (b + ((t << s) | (t >>> (32 - s)))) | 0;
    }
    md5Words[0] += a, md5Words[1] += b, md5Words[2] += c, md5Words[3] += d;
  }

  /* MD5 of n bytes of b: its four little-endian words, in a buffer the next call reuses. */
  function md5(b, n) {
    const size = (((n + 8) >> 6) + 1) << 6;
    if (md5Pad.length < size) md5Pad = new Uint8Array(size);
    md5Pad.fill(0, 0, size);
    md5Pad.set(b.subarray(0, n));
    md5Pad[n] = 0x80;
    md5Pad[size - 8] = n << 3, md5Pad[size - 7] = n >>> 5, md5Pad[size - 6] = n >>> 13, md5Pad[size - 5] = n >>> 21;
    md5Words.set([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]);
    for (let o = 0; o < size; o += 64) {
      for (let i = 0; i < 16; i++) md5Block[i] = le32(md5Pad, o + 4 * i);
      md5Round(md5Block);
    }
    return md5Words;
  }

  function md5_32(b, n, hi, lo, k) { /* the digest's first 4 bytes, big-endian */
    hi[k] = 0, lo[k] = bswap(md5(b, n)[0]);
  }

  return { xxh3_64, fnv1a_32, md5_32, md5, bits: { xxh3_64: 64, fnv1a_32: 32, md5_32: 32 } };
})();

if (typeof module !== "undefined") module.exports = { rkHash };
