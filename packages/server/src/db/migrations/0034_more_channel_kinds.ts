import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The channel kinds of the second part of the channel layer (docs/channels.md): Telegram, email and SMS besides the
 * web chat and Meta's. A kind is connectable only once it has an adapter (`ConnectableKinds`).
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table channels drop constraint channels_kind_check;
    alter table channels add constraint channels_kind_check
      check (kind in ('web', 'widget', 'whatsapp', 'messenger', 'instagram', 'linkedin', 'telegram', 'email', 'sms'));
  `))
