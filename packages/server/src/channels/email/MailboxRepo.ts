/**
 * The SQL of the email channels' mailbox sync (docs/channels.md, "Email"): the channels to read, each one's
 * watermark (`mailbox_sync`), and the thread a mail belongs to, by the ids it references or its subject.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ChannelId, PipelineId, WorkspaceId } from "@parley/domain"
import { Effect, Option, Schema } from "effect"

/** An email channel as the sync reads it: what its inbound path needs, and when it was connected. */
export const MailboxChannel = Schema.Struct({
  id: ChannelId,
  workspace_id: WorkspaceId,
  kind: Schema.String,
  pipeline_id: Schema.NullOr(PipelineId),
  is_active: Schema.Boolean,
  credentials_ciphertext: Schema.String,
  created_at: Schema.Date
})
export type MailboxChannel = typeof MailboxChannel.Type

const Watermark = Schema.Struct({
  mailbox: Schema.String,
  uidvalidity: Schema.NumberFromString,
  last_uid: Schema.NumberFromString
})

export class MailboxRepo extends Effect.Service<MailboxRepo>()("@parley/server/MailboxRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Every active email channel with a real mailbox (a simulated one has none to read). */
    const mailboxes = SqlSchema.findAll({
      Request: Schema.Void,
      Result: MailboxChannel,
      execute: () =>
        sql`
          select id, workspace_id, kind, pipeline_id, is_active, credentials_ciphertext, created_at from channels
          where kind = 'email' and is_active and not is_simulated and credentials_ciphertext is not null
          order by id`
    })

    const watermark = SqlSchema.findOne({
      Request: ChannelId,
      Result: Watermark,
      execute: (id) => sql`select mailbox, uidvalidity::text, last_uid::text from mailbox_sync where channel_id = ${id}`
    })

    /** The conversation thread (`external_chat_id`) of a message of this channel, ours or the contact's, by id. */
    const threadByIds = SqlSchema.findOne({
      Request: Schema.Struct({ channelId: ChannelId, ids: Schema.Array(Schema.String) }),
      Result: Schema.Struct({ thread: Schema.String }),
      execute: ({ channelId, ids }) =>
        sql`
          select cv.external_chat_id as thread from messages m join conversations cv on cv.id = m.conversation_id
          where m.channel_id = ${channelId} and m.external_message_id in ${sql.in(ids)}
            and cv.external_chat_id is not null
          order by m.created_at desc limit 1`
    })

    /** The newest thread of this sender on the channel with the same subject (a reply without its headers). */
    const threadBySubject = SqlSchema.findOne({
      Request: Schema.Struct({ channelId: ChannelId, from: Schema.String, subjectKey: Schema.String }),
      Result: Schema.Struct({ thread: Schema.String }),
      execute: ({ channelId, from, subjectKey }) =>
        sql`
          select cv.external_chat_id as thread from messages m join conversations cv on cv.id = m.conversation_id
          where m.channel_id = ${channelId} and m.role = 'user' and cv.external_chat_id is not null
            and m.attachments @> ${JSON.stringify([{ type: "email", from, subject_key: subjectKey }])}::jsonb
          order by m.created_at desc limit 1`
    })

    return {
      mailboxes: mailboxes(undefined).pipe(Effect.orDie),
      watermark: (id: ChannelId) => watermark(id).pipe(Effect.orDie),
      /** Moves only forwards within one mailbox and UIDVALIDITY; another of either starts over. */
      advance: (id: ChannelId, mailbox: string, uidvalidity: number, lastUid: number) =>
        sql`
          insert into mailbox_sync (channel_id, mailbox, uidvalidity, last_uid)
          values (${id}, ${mailbox}, ${uidvalidity}, ${lastUid})
          on conflict (channel_id) do update set
            last_uid = case when mailbox_sync.uidvalidity = excluded.uidvalidity
                             and mailbox_sync.mailbox = excluded.mailbox
                            then greatest(mailbox_sync.last_uid, excluded.last_uid) else excluded.last_uid end,
            mailbox = excluded.mailbox, uidvalidity = excluded.uidvalidity, updated_at = now()`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      threadByIds: (channelId: ChannelId, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed(Option.none<string>())
          : threadByIds({ channelId, ids }).pipe(Effect.map(Option.map((r) => r.thread)), Effect.orDie),
      threadBySubject: (channelId: ChannelId, from: string, subjectKey: string) =>
        threadBySubject({ channelId, from, subjectKey }).pipe(Effect.map(Option.map((r) => r.thread)), Effect.orDie)
    }
  })
}) {}
