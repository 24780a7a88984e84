/**
 * `<data dir>/server.json`: where the server holding the embedded database takes the CLI's commands.
 * Written (mode 0600) by AdminServer.ts, read by the CLI without loading the server.
 */
import * as Path from "node:path"

export const serverInfoPath = (dataDir: string) => Path.join(dataDir, "server.json")

export interface ServerInfo {
  readonly pid: number
  readonly admin_url: string
  readonly admin_secret: string
}
