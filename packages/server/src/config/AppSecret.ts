import { Data, Effect, Option, Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { randomBase62 } from "../identity/Secrets.js"
import { AppConfig } from "./AppConfig.js"

export class AppSecretMissing extends Data.TaggedError("AppSecretMissing")<{ readonly message: string }> {}

/**
 * `APP_SECRET`: set it in production (required with `DATABASE_URL`); on the embedded default it is
 * generated once and kept in the data dir (mode 0600), so secrets stored encrypted stay readable.
 * Encrypts channel secrets with AES-256-GCM under a key derived from it.
 */
export class AppSecret extends Effect.Service<AppSecret>()("@parley/server/AppSecret", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const secret = yield* Option.match(config.appSecret, {
      onSome: (s) => Effect.succeed(Redacted.value(s)),
      onNone: () =>
        Option.isSome(config.databaseUrl)
          ? Effect.fail(new AppSecretMissing({ message: "APP_SECRET is required when DATABASE_URL is set" }))
          : Effect.sync(() => {
            const file = Path.join(config.dataDir, "app-secret")
            if (Fs.existsSync(file)) return Fs.readFileSync(file, "utf8").trim()
            Fs.mkdirSync(config.dataDir, { recursive: true })
            const generated = randomBase62(48)
            Fs.writeFileSync(file, generated + "\n", { mode: 0o600 })
            return generated
          })
    })
    const key = createHash("sha256").update(`parley:secretbox:${secret}`).digest()
    /** Keys for other purposes are derived apart, so one never signs what another means. */
    const derive = (purpose: string) => createHash("sha256").update(`parley:${purpose}:${secret}`).digest()
    const socketKey = derive("socket-token")
    /** Public: identifies this deployment's socket application to clients (SPEC.md 2.8 `app_key`). */
    const socketAppKey = `pk_${derive("socket-app-key").toString("hex").slice(0, 24)}`
    const filesKey = derive("signed-files")
    /** Signs the account pages' CSRF tokens. */
    const accountKey = derive("account-csrf")
    /** Signs website visitors' widget sessions. */
    const widgetKey = derive("widget-session")
    /** Signs the tokens of links that start a chat tied to a known contact (channels/ChannelLinks.ts). */
    const linkKey = derive("channel-link")

    const encrypt = (plaintext: string): string => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, iv)
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), body.toString("base64url")]
        .join(":")
    }
    const decrypt = (sealed: string): string => {
      const [version, iv, tag, body] = sealed.split(":")
      if (version !== "v1" || iv === undefined || tag === undefined || body === undefined) {
        throw new Error("Unknown secret format")
      }
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
      decipher.setAuthTag(Buffer.from(tag, "base64url"))
      return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
    }
    return { encrypt, decrypt, socketKey, socketAppKey, filesKey, accountKey, widgetKey, linkKey }
  })
}) {}
