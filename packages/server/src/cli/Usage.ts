/** The CLI's usage text: printed without loading the server (`parley --help` answers at once). */
export const USAGE = `Usage: pnpm parley <command> [options] [--json]

  serve [--role all|api|receiver|worker]
  migrate                      apply pending migrations, and nothing else

  user create --email E --password P [--name N] [--workspace-name W] [--credits N] [--training-credits N]
  user list
  user show --email E | --id N
  user grant-manager --email E --workspace-id N
  user make-super --email E

  workspace create --email OWNER --name N [--credits N] [--training-credits N]
  workspace list
  workspace show --workspace-id N
  workspace set --workspace-id N [--credits N] [--training-credits N] [--subscription active|inactive]
                [--drafts on|off]

  token create --email E --scopes a,b [--name N] [--expires-in-days N]
  token list [--email E]
  token show --id N
  token revoke --id N

  channel create --workspace-id N --kind web|widget|whatsapp|messenger|instagram|telegram|sms|email
                 [--pipeline-id N] [--name N] [--callback-url U] [--allowed-origins a,b] [--allowed-ips a,b]
                 any provider kind: --simulator (the simulator Parley ships plays the provider; no account)
                 whatsapp: --phone-number-id N --access-token T --app-secret S
                           [--business-account-id N] [--verify-token T] [--api-version v23.0]
                 messenger: --page-id N --page-access-token T --app-secret S [--verify-token T] [--api-version v23.0]
                 instagram: --instagram-account-id N --access-token T --app-secret S [--verify-token T]
                 telegram: --bot-token T (Parley sets the bot's webhook)
                 sms: --account-sid AC... --auth-token T --from-number +14155550100|whatsapp:+1...|MG...
                 email: --address A --imap-host H --imap-port 993 --imap-password P
                        --smtp-host H --smtp-port 465|587 --smtp-password P [--imap-user U] [--smtp-user U]
                        (TLS on 993 and 465, STARTTLS otherwise; the logins default to the address)
  channel list [--workspace-id N]
  channel show --id N
  channel rotate --id N

  pipeline list [--workspace-id N]
  pipeline show --id N

  providers list [--workspace-id N]
  providers add --kind openai_compatible|openai|anthropic|google --name N [--base-url U] [--api-key K|-]
                [--header "Name: value"]... [--timeout-ms N] [--workspace-id N | --server-wide]
                [--charge-credits yes|no] [--skip-check]
      (Ollama --base-url http://127.0.0.1:11434/v1, vLLM http://127.0.0.1:8000/v1, LM Studio
       http://127.0.0.1:1234/v1, OpenRouter https://openrouter.ai/api/v1; --api-key - reads the key from
       standard input. Saving asks the server for its models first, unless --skip-check)
  providers check --id N [--model M]   (exit code 1 when the check did not pass)
  providers remove --id N
  models list [--provider-id N]
  models add --provider-id N --model M [--name N] [--input-price USD] [--output-price USD]
             [--context-window N] [--capabilities tools,vision,audio_input,transcription,embeddings]
      (prices per million tokens)
  models remove --id N
      (providers and models go through the REST API at --url or PARLEY_URL, default
       http://127.0.0.1:PORT, with --token or PARLEY_TOKEN: a token with models:read and models:write)

  knowledge import --table-id N --file rows.csv|rows.jsonl [--batch-size 200]
      (CSV with a header row, or JSON Lines; a default_id column is required. Exit code 1 when
       some rows were rejected, with the reasons; 2 for usage errors)
  knowledge add-source TABLE_ID --file PATH | --url URL [--kind url|sitemap|crawl] [--max-pages N]
                       [--max-depth N] [--include P]... [--exclude P]... [--sync off|daily|weekly] [--no-wait]
  knowledge sources TABLE_ID
  knowledge sync TABLE_ID SOURCE_ID [--no-wait]
      (a file up to 50 MB, or a page, sitemap or same-host crawl; add-source and sync follow the source
       until it is ready, with its progress on stderr, exit code 1 when it failed. Through the REST API at
       --server or PARLEY_URL, default http://127.0.0.1:PORT, with --token or PARLEY_TOKEN: knowledge:write)

  eval run --pipeline N --cases FILE... [--version live] [--concurrency 1-8] [--url U] [--token T]
      (YAML or JSON case files, see docs/evals.md; through the REST API at --url or PARLEY_URL,
       default http://127.0.0.1:PORT, with --token or PARLEY_TOKEN. Each case's verdict on stderr;
       exit code 0 only when every case passed, 1 when one failed, 2 for usage errors)

Creating a user or workspace prints what it still needs before its agent replies (credits, an active
subscription, a pipeline with stages, a channel linked to it). Lists and shows never print secrets:
a token's secret and a channel's client secret are shown once, by create (and channel rotate).

While \`parley serve\` holds the embedded data dir, commands go to it; otherwise the CLI opens the
database itself (DATABASE_URL, or the data dir), runs the command and exits. It never starts the
worker engine. --json prints the result (or {"error": ...}) as JSON.
`
