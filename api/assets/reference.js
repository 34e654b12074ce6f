/*
 * Starts Redoc on the reference page (GET /docs): a file of its own because the page's Content-Security-Policy allows
 * no inline script. Redoc's theme uses the system font stack (its default names Roboto and Montserrat, which a page
 * would fetch from Google Fonts) and the console's accent colour; nothing is loaded from another origin.
 */
/* global Redoc, document */
(function () {
  var sans = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans", Arial, sans-serif';
  var mono = 'ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace';
  var options = {
    theme: {
      colors: { primary: { main: '#4f46e5' } },
      typography: {
        fontSize: '15px', fontFamily: sans, headings: { fontFamily: sans, fontWeight: '600' },
        code: { fontFamily: mono, fontSize: '13px' }, links: { color: '#4338ca' },
      },
      sidebar: { backgroundColor: '#f7f7fb' },
      rightPanel: { backgroundColor: '#1e1b3a' },
    },
    expandResponses: '200,201',
    requiredPropsFirst: true,
    jsonSampleExpandLevel: 4,
    hideHostname: true,
  };
  Redoc.init('openapi.json', options, document.getElementById('redoc'));
})();
