/** The operator console's entry: renders the app into the page `/console` serves. */
import { render } from "preact"
import { currentToken } from "./api.js"
import { App } from "./App.js"
import { connect } from "./live.js"
import "./console.css"

// the token and the socket first: every call and the workspace's room wait on them
void currentToken().catch(() => undefined)
connect()

const root = document.getElementById("app")!
// the server's "Loading" placeholder goes; the app takes the element over
root.replaceChildren()
render(<App />, root)
