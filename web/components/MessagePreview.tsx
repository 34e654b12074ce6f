import { useEffect, useRef } from 'preact/hooks';

/**
 * An email's HTML, shown as the recipient's mail client would (its own styles, no scripts), in an iframe of
 * `/app/preview`: an empty document with its own Content-Security-Policy (api/console.ts previewCsp: inline styles,
 * `data:` images, remote images only when `remoteImages`), never the console's document or policy.
 *
 * The iframe is sandboxed with `allow-same-origin` only (no scripts, forms, popups or top navigation), which lets the
 * console parse the message with the preview's own DOMParser (an inert document: nothing loads, nothing runs) and move
 * its nodes into the preview document, where that document's policy decides what loads. Elements that would act on the document
 * itself are dropped first (script, base, meta refresh/policy, object, embed, iframe). The frame's height follows the
 * message, so the page scrolls once. Links are not followed (a tracked link would count a click for the recipient).
 */
export function MessagePreview({ html, title, remoteImages = false }: { html: string; title: string; remoteImages?: boolean }) {
  const frame = useRef<HTMLIFrameElement>(null);

  useEffect(() => {
    const iframe = frame.current;
    if (!iframe) return undefined;
    let observer: ResizeObserver | undefined;
    const fill = () => {
      const doc = iframe.contentDocument;
      if (!doc?.documentElement) return;
      // The preview's own DOMParser: a parsed document takes the policy of its parser's document, and the console's
      // would refuse the message's inline styles.
      const Parser = (iframe.contentWindow as (Window & typeof globalThis) | null)?.DOMParser ?? DOMParser;
      const parsed = new Parser().parseFromString(html, 'text/html');
      parsed.querySelectorAll('script, base, meta[http-equiv], object, embed, iframe, frame, frameset').forEach((el) => el.remove());
      doc.replaceChild(doc.importNode(parsed.documentElement, true), doc.documentElement);
      // A click on a link would follow it inside the frame, and a tracked link would count a click for the recipient.
      doc.addEventListener('click', (event) => { if ((event.target as Element | null)?.closest?.('a[href]')) event.preventDefault(); });
      const fit = () => { iframe.style.height = `${Math.max(200, doc.documentElement.scrollHeight)}px`; };
      fit();
      observer?.disconnect();
      observer = new ResizeObserver(fit);
      observer.observe(doc.documentElement);
    };
    iframe.addEventListener('load', fill);
    // Cached: the empty document may be there before the listener.
    if (iframe.contentDocument?.readyState === 'complete' && iframe.contentDocument.URL.includes('/app/preview')) fill();
    return () => {
      iframe.removeEventListener('load', fill);
      observer?.disconnect();
    };
  }, [html, remoteImages]);

  return (
    <iframe ref={frame} class="preview-frame" title={title} sandbox="allow-same-origin" referrerpolicy="no-referrer"
      src={remoteImages ? '/app/preview?images=remote' : '/app/preview'} />
  );
}
