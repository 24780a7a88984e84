import { Data } from "effect"

/**
 * An operator command that cannot be carried out (unknown email, duplicate user, bad scope). Its own
 * module, so the CLI can name it without loading the services that fail with it.
 */
export class CommandFailed extends Data.TaggedError("CommandFailed")<{ readonly message: string }> {}
