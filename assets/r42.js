// R42's page scripts, loaded on every page as a file of this origin (the Content-Security-Policy allows no
// inline script). Each block is one behaviour; the components it works with are named in its comment.

// -- chat window: keyboard and screen reader --
// Ctrl+/ opens R42 from anywhere (Ctrl+/ is free in Chrome, Firefox, Safari and Edge, and in NVDA, JAWS and
// VoiceOver, which use Insert, CapsLock and Ctrl+Option; Alt+Shift switches the keyboard layout on Windows and
// types a character on a Mac). Focus goes to the message box when the window opens, back to the launcher when it
// closes (Esc, the X, the launcher), never to <body>. On a phone (<= 640 px) the window covers the page: it is
// a modal dialog there and Tab stays inside (a source chip closes it: ChatState.follow_source); beside the page it is a complementary region. Esc with the window
// closed closes the graph's side panel.
(function () {
  var PHONE = '(max-width: 640px)';
  function win() { return document.getElementById('r42-window'); }
  function phone() { return window.matchMedia(PHONE).matches; }
  function focusables(root) {
    return Array.prototype.filter.call(root.querySelectorAll(
      'a[href], button:not([disabled]), textarea:not([disabled]), input:not([disabled]), select:not([disabled]), [tabindex]:not([tabindex="-1"])'),
      function (el) { return !el.hidden && el.getClientRects().length > 0 && el.getAttribute('aria-hidden') !== 'true'; });
  }
  // the message box once it exists (the window mounts after the server's answer), else the window's first control
  // Once the window is there: at once if it is, else when it mounts. A window that mounted with the focus
  // already inside (the box's autofocus, or the user tabbing on) keeps it there: a wait that ended later must
  // not pull the focus back from where the user moved it. One wait at a time (the shortcut and the launcher's
  // click both ask).
  var focusWait = null;
  function focusBox(w) {
    var box = document.getElementById('r42-input') || focusables(w)[0];
    if (box) box.focus();
    return !!box;
  }
  window.r42FocusInput = function () {
    clearTimeout(focusWait);
    var w = win(), tries = 0;
    if (w && focusBox(w)) return;
    (function wait() {
      var w = win(), at = document.activeElement;
      if (w && at && at !== document.body && w.contains(at)) return;
      if (w && focusBox(w)) return;
      if (++tries < 60) focusWait = setTimeout(wait, 50);
    })();
  };
  // the optional reason after a thumbs-down, once its form has rendered: on a slow server too (it gave up after
  // 2 s), but not once the reader has put the focus somewhere else meanwhile
  window.r42FocusReason = function () {
    var from = document.activeElement, tries = 0;
    (function wait() {
      var box = document.getElementById('r42-reason'), at = document.activeElement;
      if (at && at !== from && at !== document.body) return;  /* they moved on */
      if (box) { box.focus(); return; }
      if (++tries < 300) setTimeout(wait, 50);  /* 15 s */
    })();
  };
  // after a close: once the window is gone and the launcher shows, focus it, unless focus went somewhere on purpose
  function afterClose(tries) {
    var l = document.getElementById('r42-launcher'), gone = !win();
    var lost = !document.activeElement || document.activeElement === document.body
      || (document.activeElement.closest && document.activeElement.closest('#r42-window'));
    if (gone && l && l.getClientRects().length > 0) { if (lost) l.focus(); return; }
    if ((tries || 0) < 300) setTimeout(function () { afterClose((tries || 0) + 1); }, 50);  /* a slow server: 15 s */
  }
  window.r42AfterClose = afterClose;
  /* the page behind a modal window: inert (no Tab, no click, no screen-reader cursor), until the window goes */
  function behind(on) {
    var page = document.querySelectorAll('#skip-link, #skip-r42, header, #main');
    for (var i = 0; i < page.length; i++) {
      if (on !== page[i].hasAttribute('inert')) { if (on) page[i].setAttribute('inert', ''); else page[i].removeAttribute('inert'); }
    }
  }
  function mode() {  /* modal dialog on a phone, complementary region beside the page */
    var w = win();
    var modal = !!w && phone();
    behind(modal);
    if (!w || (w.getAttribute('role') === 'dialog') === modal) return;
    w.setAttribute('role', modal ? 'dialog' : 'complementary');
    if (modal) w.setAttribute('aria-modal', 'true'); else w.removeAttribute('aria-modal');
  }
  // Beside the page (desktop), Tab after the message box's last control ("Verstuur") goes on to the latest
  // answer's chips, sources and buttons, and after its last one out of the window to the page (issue 49: they were
  // reachable only backwards, Tab left the window after "Verstuur"). No trap: the tour ends outside the window.
  function tour(e, w) {
    var at = document.activeElement, all = focusables(w);
    var answers = w.querySelectorAll('.r42-assistant');
    var latest = answers.length ? focusables(answers[answers.length - 1]) : [];
    if (!latest.length || !w.contains(at)) return false;
    if (at === all[all.length - 1]) {
      e.preventDefault(); w.setAttribute('data-r42-tour', '1'); latest[0].focus(); return true;
    }
    if (w.getAttribute('data-r42-tour') === '1' && at === latest[latest.length - 1]) {
      e.preventDefault(); w.removeAttribute('data-r42-tour');
      var page = focusables(document.body).filter(function (el) { return !w.contains(el); });
      var after = page.filter(function (el) { return w.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING; });
      (after[0] || page[0] || document.body).focus();
      return true;
    }
    return false;
  }
  document.addEventListener('focusin', function (e) {  /* the tour ends wherever the focus goes outside the answer */
    var w = win();
    if (w && !(e.target.closest && e.target.closest('#r42-window .r42-assistant'))) w.removeAttribute('data-r42-tour');
  });
  new MutationObserver(mode).observe(document.documentElement, { childList: true, subtree: true });
  window.matchMedia(PHONE).addEventListener('change', mode);
  document.addEventListener('keydown', function (e) {
    var w = win();
    if (e.key === '/' || e.code === 'Slash') {
      if (!e.ctrlKey || e.altKey || e.metaKey) return;
      var l = document.getElementById('r42-launcher');
      if (!l || document.documentElement.classList.contains('r42-quiz-locked')) return;
      e.preventDefault();
      if (!w) l.click();
      window.r42FocusInput();
      return;
    }
    if (e.key === 'Escape') {
      if (document.querySelector('[role="alertdialog"], [role="dialog"]:not(#r42-window)')) return;  /* Radix closes its own */
      var skip = document.getElementById('r42-reason-skip');  /* Escape in the thumbs-down's reason skips it */
      if (skip && document.activeElement && document.activeElement.id === 'r42-reason') { skip.click(); return; }
      var b = document.getElementById('r42-close');
      if (b) { b.click(); afterClose(); return; }
      var d = document.querySelector('#learn-sidebar.open #topics-close');  /* the phone's topic drawer */
      if (d && d.offsetParent !== null) { d.click(); return; }
      var p = document.getElementById('graph-panel-close');
      if (p) p.click();
      return;
    }
    if (e.key === 'Tab' && !e.shiftKey && w && w.getAttribute('aria-modal') !== 'true' && tour(e, w)) return;
    if (e.key !== 'Tab' || !w || w.getAttribute('aria-modal') !== 'true') return;
    if (document.querySelector('[role="alertdialog"]')) return;  /* "Gesprek wissen?" keeps its own focus */
    var all = focusables(w);
    if (!all.length) return;
    var first = all[0], last = all[all.length - 1], at = document.activeElement;
    if (!w.contains(at)) { e.preventDefault(); (e.shiftKey ? last : first).focus(); }
    else if (e.shiftKey && at === first) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && at === last) { e.preventDefault(); first.focus(); }
  });
  document.addEventListener('click', function (e) {
    var t = e.target && e.target.closest ? e.target : null;
    if (!t) return;
    if (t.closest('#r42-close')) { afterClose(); return; }
    if (t.closest('#r42-launcher') && !win()) window.r42FocusInput();
    else if (t.closest('#r42-window a[data-r42-cite], #r42-window a.r42-source') && phone()) afterClose();
  });
})();

// -- quiz lock --
// The quiz lock in the browser: hide the launcher (and close the window) while this user's
// localStorage `quiz:active:{userId}` is "true" -- in every tab, through the storage event. Closing
// the tab mid-quiz ends the server's quiz session too (best effort; the session also expires).
(function () {
  function uid() { var el = document.getElementById('r42-chat'); return el ? el.getAttribute('data-r42-user') || '' : ''; }
  function locked() { var u = uid(); return !!u && localStorage.getItem('quiz:active:' + u) === 'true'; }
  var last = null;
  function sync() {
    var now = locked();
    if (now === last) return;
    last = now;
    document.documentElement.classList.toggle('r42-quiz-locked', now);
    if (now) { var w = document.getElementById('r42-window'), c = document.getElementById('r42-close'); if (w && c) c.click(); }
  }
  window.addEventListener('storage', sync);
  window.addEventListener('quiz-state', sync);
  // Another tab of this user closed mid-quiz (its flag went): this tab ends the server's session too, a second
  // chance beside that tab's beacon, which a browser may drop as it tears the tab down (seen once on a busy
  // machine: the flag was gone, the session was not). Ending an ended quiz does nothing.
  window.addEventListener('storage', function (e) {
    var u = uid(), token = localStorage.getItem('r42.session');
    if (!u || e.key !== 'quiz:active:' + u || e.oldValue !== 'true' || e.newValue !== null || !token) return;
    fetch('/api/quiz/end', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                             body: JSON.stringify({ token: token }), keepalive: true }).catch(function () {});
  });
  setInterval(sync, 400);
  window.addEventListener('pagehide', function () {
    if (!document.getElementById('quiz-question') || !locked()) return;  // only a tab in a running quiz
    var token = localStorage.getItem('r42.session');
    localStorage.removeItem('quiz:active:' + uid());
    if (token && navigator.sendBeacon) {
      navigator.sendBeacon('/api/quiz/end', new Blob([JSON.stringify({ token: token })], { type: 'application/json' }));
    }
  });
})();

// -- counter --
// The chat box's character counter: shown from 7,000 characters, red above the 8,000 the server accepts; and its
// height, which follows the text (back to two lines when a question is sent).
(function () {
  window.r42Count = function () {
    var box = document.getElementById('r42-input'), out = document.getElementById('r42-count');
    if (!box || !out) return;
    var n = box.value.length;
    out.textContent = n.toLocaleString('nl-NL') + ' / 8.000 tekens' + (n > 8000 ? ': te lang om te versturen' : '');
    out.hidden = n < 7000;
    out.dataset.over = n > 8000 ? 'true' : 'false';
    box.style.height = 'auto';  /* the box grows with its text, up to about eight lines, and shrinks back */
    box.style.height = box.value ? Math.min(box.scrollHeight + 2, 180) + 'px' : '';
  };
  document.addEventListener('input', function (e) {
    if (!e.target || e.target.id !== 'r42-input') return;
    window.r42Count();  /* the server's set_value (a question taken, an edit) calls it too: chat.py FIT_INPUT */
  });
  /* Up-arrow in the empty box brings back the last question. */
  document.addEventListener('keydown', function (e) {
    var box = e.target;
    if (e.key !== 'ArrowUp' || !box || box.id !== 'r42-input' || box.value !== '') return;
    var last = box.getAttribute('data-last');
    if (!last) return;
    e.preventDefault();
    var setter = Object.getOwnPropertyDescriptor(window.HTMLTextAreaElement.prototype, 'value').set;
    setter.call(box, last);
    box.dispatchEvent(new Event('input', { bubbles: true }));
  });
  /* "Naar het nieuwste" shows when the conversation is scrolled up. */
  window.r42JumpToLatest = function () {
    var list = document.getElementById('r42-messages');
    if (list) list.scrollTo({ top: list.scrollHeight, behavior: 'smooth' });
  };
  document.addEventListener('scroll', function (e) {
    if (!e.target || e.target.id !== 'r42-messages') return;
    var list = e.target, away = list.scrollHeight - list.scrollTop - list.clientHeight > 120;
    var win = document.getElementById('r42-window');
    if (win) win.classList.toggle('r42-scrolled-up', away);
  }, true);
  document.addEventListener('submit', function () { setTimeout(window.r42Count, 300); }, true);
})();

// -- thread --
// The stored thread is shared by the tabs of one browser: a save merges by message id with what is stored
// (so two tabs never overwrite each other), and a change made in another tab makes this tab follow it.
(function () {
  window.r42SaveThread = function (key, data) {
    var mine = JSON.parse(data), stored = null;
    try { stored = JSON.parse(window.localStorage.getItem(key) || 'null'); } catch (e) { stored = null; }
    if (stored && stored.version === mine.version && (stored.cleared || 0) > (mine.cleared || 0)) {
      return JSON.stringify(stored);  /* another tab cleared the thread since: what this tab had is gone */
    }
    if (stored && stored.version === mine.version && Array.isArray(stored.messages)) {
      var latest = {}, seen = {}, out = [];
      mine.messages.forEach(function (m) { latest[m.id] = m; });
      /* the same message in both: the more finished one (an answer beats its placeholder), else this tab's */
      var rank = function (m) { return (m.status === 'incomplete' ? 0 : 1e9) + (m.content || '').length; };
      stored.messages.forEach(function (m) {
        if (!m || typeof m.id !== 'string' || seen[m.id]) return;
        var mine_m = latest[m.id];
        out.push(mine_m && rank(mine_m) >= rank(m) ? mine_m : m);
        seen[m.id] = true;
      });
      mine.messages.forEach(function (m) { if (!seen[m.id]) { out.push(m); seen[m.id] = true; } });
      var gone = {};  /* messages a tab took out (a regenerated answer, an edited question) stay out */
      (Array.isArray(stored.removed) ? stored.removed : []).concat(mine.removed || [])
        .forEach(function (id) { if (typeof id === 'string') gone[id] = true; });
      mine.removed = Object.keys(gone).slice(-200);
      mine.messages = out.filter(function (m) { return !gone[m.id]; }).slice(-50);
    }
    var merged = JSON.stringify(mine);
    window.localStorage.setItem(key, merged);
    return merged;
  };
  window.addEventListener('storage', function (e) {
    if (!e.key || e.key.indexOf('chat:thread:') !== 0) return;
    var b = document.getElementById('r42-thread-sync');
    if (b) b.click();
  });
})();

// -- unsaved --
// A form with changes not yet saved (the topic editor, the rights per user) warns before they are lost: closing or
// reloading the tab (the browser's own dialog) and following a link away (a confirm with the form's own words, in
// the reader's language: `data-r42-dirty-message`), while it says `data-r42-dirty="true"`.
(function () {
  var dirty = function () { return document.querySelector('[data-r42-dirty="true"]'); };
  window.addEventListener('beforeunload', function (e) { if (dirty()) { e.preventDefault(); e.returnValue = ''; } });
  document.addEventListener('click', function (e) {
    var a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
    var form = dirty();
    if (!a || !form || a.target === '_blank' || a.getAttribute('href').charAt(0) === '#') return;
    if (!window.confirm(form.getAttribute('data-r42-dirty-message') || 'Je wijzigingen zijn nog niet opgeslagen. Toch weggaan?')) {
      e.preventDefault();
      e.stopPropagation();
    }
  }, true);
})();

// -- quiz keys --
// The quiz: Enter goes to the next question once an answer is chosen, and leaving the page mid-quiz asks first.
(function () {
  document.addEventListener('keydown', function (e) {
    if (e.key !== 'Enter' || e.shiftKey || !document.getElementById('quiz-question')) return;
    var t = e.target;
    if (t && (t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && t.type !== 'radio'))) return;
    /* a button other than an option ("Stoppen", the dialog's buttons) does its own Enter */
    if (t && t.tagName === 'BUTTON' && t.getAttribute('role') !== 'radio') return;
    var next = document.getElementById('quiz-next');
    if (next && !next.disabled) { e.preventDefault(); e.stopPropagation(); next.click(); }
  }, true);  /* capture: the radio group handles Enter itself (and would swallow it) */
  window.addEventListener('beforeunload', function (e) {
    if (document.getElementById('quiz-question')) { e.preventDefault(); e.returnValue = ''; }
  });
  /* a link inside the app would end the attempt without the browser's warning: ask first */
  document.addEventListener('click', function (e) {
    var a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
    if (!a || !document.getElementById('quiz-question') || a.target === '_blank') return;
    if (!window.confirm('Je toets stopt als je deze pagina verlaat; je antwoorden tellen dan niet. Pagina verlaten?')) {
      e.preventDefault(); e.stopPropagation();
    }
  }, true);
})();

// -- quiz focus --
// The quiz moves focus for keyboard and screen-reader users: to each new question's heading (so it is read),
// to the result or "Toets beëindigd", and back to the intro after "Nieuwe toets" (not on a plain page view).
// When focus falls from the quiz to <body> (an option is disabled once the answer is checked, a control goes
// away), it goes to the quiz's button (or the heading) instead. The headings say `data-r42-focus` (pages/quiz.py).
// Tab past the page's last control takes focus out of the document (to the browser's own bar): that is the
// reader leaving, not focus falling, so it is left alone (before, Tab went round the quiz for ever).
(function () {
  var shown = '', last = null;  /* last: the quiz control that last had focus (focusin: a poll could miss it) */
  var key = '', keyAt = 0;  /* the last key pressed, and when */
  document.addEventListener('focusin', function (e) {
    var page = document.getElementById('quiz-page');
    last = page && e.target && page.contains(e.target) ? e.target : null;
  });
  document.addEventListener('keydown', function (e) { key = e.key; keyAt = Date.now(); }, true);
  document.addEventListener('focusout', function (e) {
    /* focus going nowhere in the page right after Tab: out of the document, the reader's own move */
    if (!e.relatedTarget && key === 'Tab' && Date.now() - keyAt < 300) last = null;
  }, true);
  setInterval(function () {
    var el = document.querySelector('#quiz-page [data-r42-focus]'), active = document.activeElement;
    if (!el) { shown = ''; last = null; return; }
    var bar = document.getElementById('quiz-progress');
    var key = el.getAttribute('data-r42-focus') + '|' + (bar ? bar.textContent : '') + '|' + el.textContent;
    if (key !== shown) {
      var first = shown === '';
      shown = key;
      if (!(first && el.getAttribute('data-r42-focus') === 'intro')) { el.focus(); return; }
    }
    var page = document.getElementById('quiz-page');
    var stuck = active && active !== document.body && active.disabled && page.contains(active);  /* kept by a disabled option */
    /* focus fell to <body> from the quiz (a disabled option, a re-rendered group, a click on the page) */
    var dropped = (!active || active === document.body) && last;
    if (stuck || dropped) {
      var next = document.getElementById('quiz-next');
      (next && !next.disabled ? next : el).focus({ preventScroll: true });
    }
  }, 100);
})();

// -- dialog focus --
// A dialog opened from a button or a menu (not from a Radix trigger: "Uitnodigen", "Importeren", the account menu's
// "Wachtwoord wijzigen") closed with focus on <body>, so the keyboard started again at the top of the page. When a
// dialog goes and focus is on <body>, it goes back to what had it before the dialog opened (a menu's own button
// for a menu item), if that is still on the page.
(function () {
  var DIALOG = '[role="dialog"],[role="alertdialog"]';
  var opener = null;
  document.addEventListener('focusin', function (e) {
    var el = e.target;
    if (el && el !== document.body && el.closest && !el.closest(DIALOG + ',[role="menu"]')) opener = el;
  });
  new MutationObserver(function (changes) {
    var closed = changes.some(function (c) {
      return Array.prototype.some.call(c.removedNodes, function (n) {
        return n.nodeType === 1 && (n.matches(DIALOG) || !!n.querySelector(DIALOG));
      });
    });
    if (!closed) return;
    setTimeout(function () {  /* after Radix's own return of focus (to its trigger, when it has one) */
      var active = document.activeElement;
      if ((!active || active === document.body) && opener && opener.isConnected && !document.querySelector(DIALOG)) {
        opener.focus({ preventScroll: true });
      }
    }, 60);
  }).observe(document.body, { childList: true, subtree: true });
})();

// -- stream check --
// While an answer streams, ask the server every few seconds whether its worker still lives: with several
// backend workers, a tab whose worker died reconnects to another, which ends the orphaned answer.
setInterval(function () {
  if (!document.getElementById('r42-stop')) return;
  var b = document.getElementById('r42-stream-check');
  if (b) b.click();
}, 4000);

// -- skip link --
// "Naar de inhoud" (components/shell.py skip_link) puts the focus on its target (<main id="main">, or the
// reading column beside the topic list), so the next Tab starts in the content; a bare fragment jump moves only
// the scroll position in a routed page.
document.addEventListener('click', function (e) {
  var r = e.target && e.target.closest ? e.target.closest('#skip-r42') : null;
  if (r) {  /* "R42 openen (Ctrl+/)": what the launcher does (the focus goes to the message box) */
    e.preventDefault();
    var l = document.getElementById('r42-launcher');
    if (l && l.getClientRects().length > 0) l.click(); else if (window.r42FocusInput) window.r42FocusInput();
    return;
  }
  var a = e.target && e.target.closest ? e.target.closest('#skip-link') : null;
  if (!a) return;
  var id = (a.getAttribute('href') || '').split('#')[1] || 'main';
  var target = document.getElementById(id) || document.getElementById('main');
  if (!target) return;
  e.preventDefault();
  target.focus();
  target.scrollIntoView({ block: 'start' });
});

// -- passage links --
// A citation chip opens a topic at a passage (/topics/<slug>#p-...). The page's content arrives after the
// route changes, so wait for the passage, scroll to it and mark it until the hash changes.
(function () {
  var done = '';
  setInterval(function () {
    var hash = window.location.hash, key = window.location.pathname + hash;
    if (!hash || hash.indexOf('#p-') !== 0 || key === done) return;
    var target = document.getElementById(decodeURIComponent(hash.slice(1)));
    if (!target || !target.classList.contains('r42-passage')) return;
    done = key;
    document.querySelectorAll('.r42-passage-hit').forEach(function (el) { el.classList.remove('r42-passage-hit'); });
    target.classList.add('r42-passage-hit');
    target.scrollIntoView({ block: 'start', behavior: 'smooth' });
    target.setAttribute('tabindex', '-1');
    target.focus({ preventScroll: true });
    setTimeout(function () { target.classList.remove('r42-passage-hit'); }, 4000);
  }, 250);
  window.addEventListener('popstate', function () { done = ''; });
})();

// The chat window's "Vraag R42 hierover": put a question in the message box (not sent), once the box exists.
window.r42Fill = function (text, tries) {
  var el = document.getElementById('r42-input');
  if (el) { el.value = text; el.focus(); el.setSelectionRange(el.value.length, el.value.length); return; }
  if ((tries || 0) < 60) setTimeout(function () { window.r42Fill(text, (tries || 0) + 1); }, 50);
};

// The page's language (issue 52): <html lang> follows the reader's language, which the page carries on #r42-lang
// (components/i18n.py), so a screen reader reads English words in an English voice.
(function () {
  function follow() {
    var marker = document.getElementById('r42-lang');
    var lang = marker && marker.getAttribute('data-lang');
    if (lang && document.documentElement.lang !== lang) document.documentElement.lang = lang;
    /* the tab's title in the reader's language, a topic page's the topic's name (components/i18n.py title_marker) */
    var title = document.getElementById('r42-page-title');
    var words = title && title.getAttribute('data-title');
    if (words && document.title !== words + ' \u00b7 R42') document.title = words + ' \u00b7 R42';
  }
  new MutationObserver(follow).observe(document.documentElement,
                                       { childList: true, subtree: true, attributes: true,
                                         attributeFilter: ['data-lang', 'data-title'] });
  follow();
})();

// A topic page is drawn from the tab's state before the server's first answer comes: a move to another topic showed
// the topic the tab last had (its title read out) for a moment. What pages/learn.py marks with the slug it shows
// (data-r42-topic) is hidden while that is not the address's slug: checked when the address changes and on each
// change of the page (a mutation's callback: before it is painted). This comes before the route focus below, which
// skips a hidden heading.
(function () {
  function wanted() {  /* the address's slug as the router gives it to the server (a "/" inside stays %2F) */
    var at = location.pathname.match(/^\/topics\/([^/]+)/);
    if (!at) return null;
    try { return decodeURIComponent(at[1]).replace(/\//g, '%2F'); } catch (e) { return at[1]; }
  }
  function mark() {
    var want = wanted(), shown = document.querySelectorAll('[data-r42-topic]');
    for (var i = 0; i < shown.length; i++) {
      var stale = want !== null && shown[i].getAttribute('data-r42-topic') !== want;
      if (stale !== shown[i].hasAttribute('data-r42-stale')) {
        if (stale) shown[i].setAttribute('data-r42-stale', ''); else shown[i].removeAttribute('data-r42-stale');
      }
    }
  }
  ['pushState', 'replaceState'].forEach(function (name) {  /* a move between two topics changes no element first */
    var original = history[name];
    history[name] = function () { var result = original.apply(this, arguments); mark(); return result; };
  });
  window.addEventListener('popstate', mark);
  new MutationObserver(mark).observe(document.documentElement, { childList: true, subtree: true,
                                                                 attributes: true, attributeFilter: ['data-r42-topic'] });
  mark();
})();

// A move to another page inside the app (a link, or a redirect after "Aanmaken") unmounts what had the focus, so
// it falls to <body> and the next Tab starts at the top of the page. Then it goes to the new page's heading (read
// out by a screen reader) once the page shows one, and to the heading drawn again if the page takes that one away
// while it loads; focus that is somewhere on purpose is left where it is. A page loaded afresh keeps the browser's
// own start (the skip links come first).
// The focus is nowhere a user put it: on <body>, or on an element the page has just taken away.
function r42FocusLost() { var at = document.activeElement; return !at || at === document.body || !at.isConnected; }

(function () {
  var path = location.pathname, wait = null, placed = null, from = null, was = null, wasWords = null, since = 0;
  function heading() {  /* a topic still hidden as the last one (data-r42-stale) has no heading yet */
    var h = document.querySelector('#main h1');
    return h && !h.closest('[data-r42-stale]') ? h : null;
  }
  function land(tries) {
    var main = document.getElementById('main');
    /* what had the focus in the old page may still be shown while the new page loads: it is on its way out */
    var leaving = from && from === document.activeElement && main && main.contains(from);
    if (!r42FocusLost() && !leaving) return;
    var h = heading();
    /* the old page's heading, still shown with its words till the new page's data comes, is not the new page's:
       a screen reader would read the old title first (five seconds at most: two pages may share a title) */
    var old = h && h === was && h.textContent === wasWords;
    if (old) { since = tries + 1; if (tries < 50) h = null; }
    /* the heading, once the page has loaded (two seconds after the old one went, else the content itself) */
    var target = h || (!old && tries - since >= 20 ? main : null);
    if (target) {
      put(target);
      if (target === main) wait = setTimeout(function () { better(0); }, 100);
      return;
    }
    if (tries < 70) wait = setTimeout(function () { land(tries + 1); }, 100);
  }
  function put(target) {
    if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
    target.focus({ preventScroll: true });
    placed = target;
  }
  /* the content had the focus (no heading yet after two seconds: a slow server); the heading, once it comes
     (fifteen seconds at most), unless the user has moved the focus meanwhile */
  function better(tries) {
    var main = document.getElementById('main'), h = heading();
    if (!main || placed !== main || document.activeElement !== main) return;
    if (h && !(h === was && h.textContent === wasWords)) { put(h); return; }
    if (tries < 150) wait = setTimeout(function () { better(tries + 1); }, 100);
  }
  /* once the user moves the focus, it is theirs */
  document.addEventListener('focusin', function (e) { if (e.target !== placed) placed = null; });
  var shown = heading(), shownWords = shown && shown.textContent;  /* the heading as last seen on this path */
  new MutationObserver(function () {
    var moved = location.pathname !== path;
    if (!moved) { shown = heading(); shownWords = shown && shown.textContent; }
    /* a page that comes in twice (its heading, a skeleton while it loads, then the page) takes away the heading
       the focus went to: it goes to the heading drawn again */
    var redrawn = placed && !placed.isConnected && r42FocusLost();
    if (!moved && !redrawn) return;
    path = location.pathname;
    from = moved ? document.activeElement : null;
    was = moved ? shown : null;
    wasWords = moved ? shownWords : null;
    since = 0;
    placed = null;
    clearTimeout(wait);
    wait = setTimeout(function () { land(0); }, 50);
  }).observe(document.documentElement, { childList: true, subtree: true });
})();

// A confirmation opened by the server (no trigger of its own to return to) leaves the focus on <body> when it
// closes, and the list it changed may be drawn again under the focus; so does a control that was disabled while
// it worked (the drop zone during an upload). `r42FocusIfLost(selectors)`: once no dialog is open, and for three
// seconds, focus that falls to <body> goes to the first of `selectors` (what opened the dialog, once the list is
// back); the others are fallbacks, taken after a second without the first. Focus the user moved somewhere else is
// left there.
window.r42FocusIfLost = function (selectors) {
  var start = Date.now(), placed = null;
  (function tick() {
    var open = document.querySelector('[role="alertdialog"], [role="dialog"]:not(#r42-window)');
    var at = document.activeElement;
    var lost = r42FocusLost() || (open && open.contains(at));
    if (!open && (lost || (placed && at === placed))) {
      var first = document.querySelector(selectors[0]), el = first;
      var late = Date.now() - start > 1000;  /* the list had time to come back without it */
      for (var i = 1; !el && late && i < selectors.length; i++) el = document.querySelector(selectors[i]);
      if (el && el !== at) { el.focus(); placed = el; }
      if (first && at === first) return;  /* where it belongs */
    } else if (!open) {
      return;  /* the user went on */
    }
    if (Date.now() - start < 3000) setTimeout(tick, 50);
  })();
};
