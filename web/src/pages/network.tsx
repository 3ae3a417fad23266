/** The server's Network section: not built yet (issue 21). */
export function NetworkSection() {
  return <h2>Network</h2>;
}
