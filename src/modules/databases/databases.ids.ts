/**
 * The `id` Pterodactyl gives a server database is a hashid of its row id (an
 * opaque short string, e.g. "Wx2LNkqA"), what PteroJS and jspteroapi pass
 * back in the path. Quetzal's is its own reversible encoding of the same
 * kind (docs/DATABASES.md): the row id scrambled by an odd multiplier modulo
 * 2^32 and written in base 62, 8 characters.
 */
const ALPHABET = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789lIo01';
const BASE = BigInt(ALPHABET.length);
const MODULUS = 2n ** 32n;
const MULTIPLIER = 2654435761n;
// The multiplier's inverse modulo 2^32.
const INVERSE = 244002641n;
const LENGTH = 8;

export function encodeDatabaseId(id: number): string {
  let value = (BigInt(id) * MULTIPLIER) % MODULUS;
  let text = '';
  for (let i = 0; i < LENGTH; i++) {
    text = ALPHABET[Number(value % BASE)]! + text;
    value /= BASE;
  }
  return text;
}

/** The row id, or undefined for a string no id encodes to. */
export function decodeDatabaseId(text: string): number | undefined {
  if (text.length !== LENGTH) return undefined;
  let value = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return undefined;
    value = value * BASE + BigInt(digit);
  }
  if (value >= MODULUS) return undefined;
  const id = Number((value * INVERSE) % MODULUS);
  return id > 0 && encodeDatabaseId(id) === text ? id : undefined;
}
