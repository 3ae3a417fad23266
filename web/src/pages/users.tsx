/** The server's Users section: not built yet (issue 21). */
export function UsersSection() {
  return <h2>Users</h2>;
}
