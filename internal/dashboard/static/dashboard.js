// drover dashboard: live updates. The page's content region names an event stream (data-watch)
// that the server feeds from Kubernetes watches made with the viewer's identity; on "change"
// the region is fetched again (X-Drover-Fragment) and replaced, without reloading the page.
(function () {
  'use strict';
  var main = document.getElementById('content');
  if (!main || !window.EventSource || !window.fetch) {
    return;
  }
  var live = document.getElementById('live');
  var source = null;
  var key = null;
  var busy = false;
  var again = false;

  function setLive(state, text) {
    document.body.setAttribute('data-live', state);
    if (live) {
      live.setAttribute('data-state', state);
      live.title = 'Live updates: ' + text;
    }
  }

  function connect() {
    var view = main.querySelector('.view');
    var url = view ? view.getAttribute('data-watch') : '';
    var k = view ? view.getAttribute('data-watch-key') : '';
    if (!url) {
      if (source) {
        source.close();
        source = null;
      }
      setLive('off', 'off');
      return;
    }
    if (source && k === key) {
      return;
    }
    if (source) {
      source.close();
    }
    key = k;
    source = new EventSource(url);
    source.addEventListener('ready', function () { setLive('on', 'on'); });
    source.addEventListener('change', refresh);
    source.onerror = function () { setLive('off', 'reconnecting'); };
  }

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(window.location.pathname + window.location.search, {
      headers: { 'X-Drover-Fragment': '1' },
      credentials: 'same-origin',
      cache: 'no-store'
    }).then(function (r) {
      if (r.status === 401) {
        window.location.reload();
        return null;
      }
      return r.text();
    }).then(function (html) {
      if (html === null) {
        return;
      }
      main.innerHTML = html;
      var n = parseInt(document.body.getAttribute('data-updates') || '0', 10) + 1;
      document.body.setAttribute('data-updates', String(n));
      connect();
    }, function () {
      setLive('off', 'refresh failed; retrying on the next change');
    }).then(function () {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    });
  }

  connect();
}());
