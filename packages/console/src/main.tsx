/** The operator console's entry: renders the app into the page `/console` serves. */
import { render } from "preact"
import { App } from "./App.js"
import "./console.css"

const root = document.getElementById("app")!
// the server's "Loading" placeholder goes; the app takes the element over
root.replaceChildren()
render(<App />, root)
