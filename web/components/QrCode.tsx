import { encode } from 'uqr';

/**
 * A QR code drawn as one SVG path (uqr encodes; nothing here writes HTML). Dark on white in both colour schemes: a
 * phone's camera reads dark modules on a light ground. Imported by the page that shows it only, so uqr stays in that
 * page's chunk.
 */
export function QrCode({ value, label, size = 176 }: { value: string; label: string; size?: number }) {
  const qr = encode(value, { ecc: 'M', border: 4 });
  let d = '';
  qr.data.forEach((row, y) => row.forEach((dark, x) => { if (dark) d += `M${x} ${y}h1v1h-1z`; }));
  return (
    <svg class="qr-code" role="img" aria-label={label} width={size} height={size} viewBox={`0 0 ${qr.size} ${qr.size}`} shape-rendering="crispEdges">
      <rect width={qr.size} height={qr.size} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}
