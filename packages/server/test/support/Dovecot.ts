/**
 * A private Dovecot IMAP server for a test (the `dovecot-imapd` package): its own config, base_dir, state and
 * maildirs in a temp dir, one user with a plaintext password (passwd-file), no SSL, on a free 127.0.0.1 port, run
 * in the foreground (`dovecot -F -c <conf>`) as a child process and stopped with the scope. Test mail is put in
 * the INBOX with IMAP APPEND (imapflow), the protocol path a mail server's delivery ends in too.
 */
import { Effect } from "effect"
import { ImapFlow } from "imapflow"
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "./Ports.js"

export interface Dovecot {
  readonly host: string
  readonly port: number
  readonly users: ReadonlyArray<string>
  readonly password: string
  /** Puts a raw mail in `user`'s INBOX; its UID. */
  readonly append: (user: string, raw: string) => Promise<number>
  readonly log: () => string
}

/**
 * Who Dovecot's processes run as. As root (CI): Dovecot's own users (the package makes them), and the mail owned by
 * nobody (65534), since Dovecot runs no login or mail process as root. Otherwise: the user running the test.
 */
const root = process.getuid?.() === 0
const me = Os.userInfo()
const OWNER = root ? 65534 : me.uid
const processUsers = root
  ? "default_internal_user = dovecot\ndefault_login_user = dovenull"
  : `default_internal_user = ${me.username}\ndefault_login_user = ${me.username}\nfirst_valid_uid = ${me.uid}`

const config = (dir: string, port: number) => `
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
instance_name = parley-test-${port}
log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:${dir}/mail/%u
${processUsers}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = static
  args = uid=${OWNER} gid=${root ? OWNER : me.gid} home=${dir}/home/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service stats {
  inet_listener http {
    port = 0
  }
}
`

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = Net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/** Dovecot with `users` mailboxes (`mailbox1@example.com`, ...), all with `password`. */
export const makeDovecot = (users = 1, password = "mailbox-secret") =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-dovecot-"))),
      (d) => Effect.sync(() => Fs.rmSync(d, { recursive: true, force: true }))
    )
    const port = yield* Effect.promise(freePort)
    // Dovecot's processes find their way to the sockets and maildirs under it
    Fs.chmodSync(dir, 0o755)
    for (const sub of ["run", "state", "mail", "home"]) Fs.mkdirSync(Path.join(dir, sub))
    if (root) { for (const sub of ["mail", "home"]) Fs.chownSync(Path.join(dir, sub), OWNER, OWNER) }
    const names = Array.from({ length: users }, (_, i) => `mailbox${i + 1}@example.com`)
    Fs.writeFileSync(Path.join(dir, "passwd"), names.map((user) => `${user}:{PLAIN}${password}::::::\n`).join(""))
    Fs.writeFileSync(Path.join(dir, "dovecot.conf"), config(dir, port))
    const log = () => {
      try {
        return Fs.readFileSync(Path.join(dir, "dovecot.log"), "utf8")
      } catch {
        return ""
      }
    }
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        // Debian installs it in /usr/sbin, which a user's PATH may lack
        Child.spawn(Fs.existsSync("/usr/sbin/dovecot") ? "/usr/sbin/dovecot" : "dovecot", [
          "-F",
          "-c",
          Path.join(dir, "dovecot.conf")
        ], { stdio: "ignore" })
      ),
      (child) =>
        Effect.async<void>((resume) => {
          if (child.exitCode !== null) return resume(Effect.void)
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGTERM")
        })
    )
    yield* Effect.promise(async () => {
      for (let i = 0; i < 200; i++) {
        if (await listening(port)) return
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error(`Dovecot did not listen on ${port}:\n${log()}`)
    })
    const append = async (user: string, raw: string) => {
      const client = new ImapFlow({
        host: "127.0.0.1",
        port,
        secure: false,
        auth: { user, pass: password },
        logger: false
      })
      await client.connect()
      try {
        const done = await client.append("INBOX", raw)
        return done === false ? 0 : done.uid ?? 0
      } finally {
        await client.logout()
      }
    }
    return { host: "127.0.0.1", port, users: names, password, append, log } satisfies Dovecot
  })
