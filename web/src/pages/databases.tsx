/** The server's Databases section: not built yet (issue 21). */
export function DatabasesSection() {
  return <h2>Databases</h2>;
}
