import { randomBytes } from "node:crypto"

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/** A ULID: 48-bit millisecond time then 80 random bits, Crockford base32; sorts by creation time. */
export const ulid = (now = Date.now()): string => {
  let time = ""
  let t = now
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time
    t = Math.floor(t / 32)
  }
  const bytes = randomBytes(10)
  let random = ""
  let bits = 0
  let value = 0
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      random += CROCKFORD[(value >> (bits - 5)) & 31]
      bits -= 5
    }
    value &= (1 << bits) - 1
  }
  return time + random
}
