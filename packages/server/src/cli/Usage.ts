/** The CLI's usage text: printed without loading the server (`parley --help` answers at once). */
export const USAGE = `Usage: pnpm parley <command> [options] [--json]

  migrate
  serve [--role all|api|receiver|worker]
  user create --email E --password P [--name N] [--workspace-name W]
  user grant-manager --email E --workspace-id N
  user make-super --email E
  workspace set --workspace-id N [--credits N] [--training-credits N] [--subscription active|inactive]
  token create --email E --scopes a,b [--name N] [--expires-in-days N]
  token revoke --id N
  channel create --workspace-id N --kind web [--pipeline-id N] [--name N] [--callback-url U]
                 [--allowed-origins a,b] [--allowed-ips a,b]
  channel rotate --id N
  knowledge import --table-id N --file rows.csv|rows.jsonl [--batch-size 200]
      (CSV with a header row, or JSON Lines; a default_id column is required. Exit code 1 when
       some rows were rejected, with the reasons; 2 for usage errors)
`
