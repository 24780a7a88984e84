import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * How far an email channel's mailbox has been read (docs/channels.md, "Email"): which mailbox (its server and login:
 * new credentials may name another), the IMAP folder's UIDVALIDITY and the highest UID stored. It moves only after a
 * mail is stored, so a crash reads a mail again (and its Message-ID stores it once) rather than losing it.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table mailbox_sync (
      channel_id bigint primary key references channels (id) on delete cascade,
      mailbox text not null,
      uidvalidity bigint not null,
      last_uid bigint not null,
      updated_at timestamptz not null default now()
    );
  `))
