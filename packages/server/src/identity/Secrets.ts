/** Password hashing (scrypt) and bearer-token material: random, prefixed, stored only as SHA-256. */
import { Effect } from "effect"
import { createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto"

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 64 } as const

const scryptAsync = (password: string, salt: Buffer) =>
  Effect.async<Buffer>((resume) => {
    scrypt(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p }, (err, key) =>
      resume(err ? Effect.die(err) : Effect.succeed(key)))
  })

/** `scrypt$N$r$p$salt$hash`, base64url parts. */
export const hashPassword = (password: string) =>
  Effect.gen(function*() {
    const salt = randomBytes(16)
    const key = yield* scryptAsync(password, salt)
    return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString("base64url")}$${key.toString("base64url")}`
  })

export const verifyPassword = (password: string, stored: string) =>
  Effect.gen(function*() {
    const [kind, , , , salt, hash] = stored.split("$")
    if (kind !== "scrypt" || salt === undefined || hash === undefined) return false
    const key = yield* scryptAsync(password, Buffer.from(salt, "base64url"))
    const expected = Buffer.from(hash, "base64url")
    return expected.length === key.length && timingSafeEqual(expected, key)
  })

/** Whether two secrets (a token, a signature, a password in a header) are equal, in time that does not tell how close. */
export const equalSecrets = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** Uniform base62 from rejection sampling: `length` chars carry length*5.95 bits. */
export const randomBase62 = (length: number): string => {
  let out = ""
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62]
    }
  }
  return out
}

export const sha256Hex = (value: string) => createHash("sha256").update(value).digest("hex")

/** `pat_` + 43 base62 chars (~256 bits). Only the SHA-256 and the last four chars are stored. */
export const newAccessToken = (prefix = "pat_") => {
  const token = prefix + randomBase62(43)
  return { token, hash: sha256Hex(token), hint: token.slice(-4) }
}
