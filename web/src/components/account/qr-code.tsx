/** A QR code drawn by uqr as SVG, dark on light with the standard four-module quiet zone. */
import { useMemo } from 'preact/hooks';
import { renderSVG } from 'uqr';

export function QrCode({ text, label }: { text: string; label: string }) {
  // An <img> of the SVG, not inlined markup: the browser draws it, nothing is parsed into the page.
  const source = useMemo(
    () =>
      `data:image/svg+xml;charset=utf-8,${encodeURIComponent(
        renderSVG(text, { ecc: 'M', border: 4, pixelSize: 8, whiteColor: '#ffffff', blackColor: '#000000' }),
      )}`,
    [text],
  );
  return <img class="qr-code" src={source} alt={label} width={216} height={216} />;
}
