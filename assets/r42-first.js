// R42's first script, inlined in every page's head (r42_app.py) so that it runs before the app's own scripts (a
// script file of ours is loaded after hydration, too late). The Content-Security-Policy allows it by its SHA-256.
//
// Storage inside a learning environment's frame:
// A browser that blocks third-party cookies (Chromium's incognito and its default for a frame of another site,
// Safari always) also refuses localStorage and sessionStorage to a framed page: reading either throws. R42 opened
// from an LMS (LTI) then keeps its session and its tab's token in memory for as long as the frame lives, so the
// app runs as ever; "Nieuw tabblad" (the bar, inside a frame only) is the way out that keeps it.
(function () {
  function memory() {
    var data = {};
    return {
      getItem: function (k) { return Object.prototype.hasOwnProperty.call(data, k) ? data[k] : null; },
      setItem: function (k, v) { data[k] = String(v); },
      removeItem: function (k) { delete data[k]; },
      clear: function () { data = {}; },
      key: function (i) { return Object.keys(data)[i] || null; },
      get length() { return Object.keys(data).length; }
    };
  }
  var framed = true;
  try { framed = window.top !== window; } catch (e) { framed = true; }
  if (framed) document.documentElement.setAttribute('data-r42-framed', '');  // shows "Nieuw tabblad"
  ['localStorage', 'sessionStorage'].forEach(function (name) {
    try { window[name].getItem('r42'); } catch (e) {
      Object.defineProperty(window, name, { value: memory(), configurable: true });
      document.documentElement.setAttribute('data-r42-storage', 'memory');
    }
  });
})();
