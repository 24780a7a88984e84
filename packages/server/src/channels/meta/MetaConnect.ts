/**
 * How a Messenger or Instagram channel is connected (docs/channels.md): the credentials given on create, or
 * `{simulator: true}` for the simulator Parley ships; the verify token is generated when not given, and shown once.
 */
import { Schema } from "effect"
import { randomInt } from "node:crypto"
import { randomBase62 } from "../../identity/Secrets.js"
import type { ProviderConnect } from "../Providers.js"
import { InstagramCredentialsInput, type MessagingCredentials, MessengerCredentialsInput } from "./MetaMessaging.js"

/** A channel that talks to the simulator Parley ships: everything else is generated. */
export const SimulatedInput = Schema.Struct({ simulator: Schema.Literal(true) })

/** The Graph API version used when a channel does not name one. */
export const DEFAULT_API_VERSION = "v23.0"

const randomDigits = (n: number) => Array.from({ length: n }, () => randomInt(10)).join("")

type Input = typeof MessengerCredentialsInput.Type | typeof InstagramCredentialsInput.Type

export const metaConnect = (kind: "messenger" | "instagram"): ProviderConnect => ({
  inputFor: (given) =>
    typeof given === "object" && given !== null && "simulator" in given
      ? SimulatedInput
      : kind === "messenger"
      ? MessengerCredentialsInput
      : InstagramCredentialsInput,
  simulated: (stored: MessagingCredentials) => stored.simulator === true,
  complete: (input: Input | typeof SimulatedInput.Type): MessagingCredentials => {
    const common = { verify_token: `pvt_${randomBase62(32)}`, api_version: DEFAULT_API_VERSION }
    if ("simulator" in input) {
      const token = `sim_${randomBase62(40)}`
      const id = `1${randomDigits(14)}`
      return {
        ...(kind === "messenger" ? { page_id: id, page_access_token: token } : {
          instagram_account_id: id,
          access_token: token
        }),
        app_secret: randomBase62(32),
        ...common,
        simulator: true
      }
    }
    return {
      ...input,
      verify_token: input.verify_token ?? common.verify_token,
      api_version: input.api_version ?? common.api_version
    }
  },
  shown: (stored: MessagingCredentials) => ({ verify_token: stored.verify_token })
})
