// vlk-memact viewer: the one script (no inline script anywhere, CSP script-src 'self').
// Live updates over server-sent events: on "change" the page fetches itself again and swaps
// <main>, keeping open cards open. The server renders and escapes everything; this file only
// moves nodes the server produced for this same page.
// Writes (forms with class "write"): posted with fetch() asking for JSON, the outcome shown in
// #write-status (a refusal says why), then <main> fetched again so the new state shows at once.
// Without this script the same forms post normally and the server answers with a page.
"use strict";

(function () {
  var status = document.getElementById("live-status");
  var main = document.getElementById("main");
  var inFlight = false;
  var again = false;

  function setStatus(state, text) {
    if (!status) return;
    status.className = "live " + state;
    status.textContent = text;
  }

  function openTarget() {
    if (!location.hash) return;
    var target = document.getElementById(location.hash.slice(1));
    if (!target) return;
    var details = target.querySelectorAll("details");
    for (var i = 0; i < details.length; i++) {
      if (details[i].classList.contains("card") || details[i].classList.contains("log")) {
        details[i].open = true;
        break;
      }
    }
  }

  // An open <details> is remembered by its own id, or by the nearest id above it and its position there.
  function openIds() {
    var ids = [];
    var open = main.querySelectorAll("details[open]");
    for (var i = 0; i < open.length; i++) {
      if (open[i].id) { ids.push(open[i].id + "|self"); continue; }
      var holder = open[i].parentElement && open[i].parentElement.closest("[id]");
      if (holder) ids.push(holder.id + "|" + Array.prototype.indexOf.call(holder.querySelectorAll("details"), open[i]));
    }
    return ids;
  }

  function reopen(ids) {
    ids.forEach(function (entry) {
      var parts = entry.split("|");
      var holder = document.getElementById(parts[0]);
      if (!holder) return;
      var details = parts[1] === "self" ? holder : holder.querySelectorAll("details")[Number(parts[1])];
      if (details) details.open = true;
    });
  }

  function busy() {
    var active = document.activeElement;
    return active && (active.tagName === "INPUT" || active.tagName === "TEXTAREA" || active.tagName === "BUTTON");
  }

  function refresh(force) {
    if (inFlight || (!force && busy())) { again = true; return; }
    inFlight = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        if (!fresh) return;
        var ids = openIds();
        var nodes = document.adoptNode(fresh).childNodes;
        main.replaceChildren.apply(main, Array.prototype.slice.call(nodes));
        reopen(ids);
        main.dispatchEvent(new CustomEvent("vlk:updated", { bubbles: true }));
        setStatus("on", "live · updated " + new Date().toLocaleTimeString());
      })
      .catch(function () { setStatus("off", "live · update failed"); })
      .then(function () {
        inFlight = false;
        if (again) { again = false; setTimeout(refresh, 500); }
      });
  }

  function connect() {
    if (!window.EventSource || !main || main.dataset.live === "off") { setStatus("off", "live off"); return; }
    var events = new EventSource("/events");
    events.addEventListener("hello", function () { setStatus("on", "live"); });
    events.addEventListener("change", refresh);
    events.onerror = function () {
      setStatus(events.readyState === EventSource.CLOSED ? "off" : "unknown",
                events.readyState === EventSource.CLOSED ? "live off" : "live · reconnecting");
    };
  }

  var writeStatus = document.getElementById("write-status");

  function say(state, text) {
    if (!writeStatus) return;
    writeStatus.className = "flash " + state;
    writeStatus.textContent = text;
    writeStatus.hidden = false;
  }

  // What a response says: {message} from the viewer's JSON, the guard's plain text, or an HTML page's text.
  function messageOf(response) {
    var type = response.headers.get("Content-Type") || "";
    if (type.indexOf("application/json") === 0) {
      return response.json().then(function (body) { return String(body && body.message || ""); });
    }
    return response.text().then(function (text) {
      if (type.indexOf("text/html") === 0) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var node = doc.querySelector(".message") || doc.body;
        text = node ? node.textContent : "";
      }
      text = text.replace(/\s+/g, " ").trim();
      return text.length > 400 ? text.slice(0, 399) + "…" : text;
    });
  }

  function setDisabled(form, disabled) {
    var buttons = form.querySelectorAll("button");
    for (var i = 0; i < buttons.length; i++) buttons[i].disabled = disabled;
  }

  function send(form) {
    setDisabled(form, true);
    if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
    say("pending", "Working…");
    fetch(form.getAttribute("action"), {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      credentials: "same-origin",
      headers: { "Accept": "application/json" }
    })
      .then(function (response) {
        return messageOf(response).then(function (message) {
          if (response.ok) {
            say("ok", message || "Done.");
            refresh(true);
          } else {
            say("error", "Refused (HTTP " + response.status + "): " + (message || response.statusText || "no reason given"));
            setDisabled(form, false);
          }
        });
      })
      .catch(function (error) {
        say("error", "The viewer could not be reached (" + error.message + "); is vlk-memact ui still running?");
        setDisabled(form, false);
      });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var button = form.querySelector("[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); return; }
    if (!form.classList.contains("write") || !window.fetch || !window.FormData || !window.URLSearchParams) return;
    event.preventDefault();
    send(form);
  });
  window.addEventListener("hashchange", openTarget);
  openTarget();
  connect();
})();
