// driver.js: one headless Firefox (Debian's firefox-esr) driven through
// WebDriver BiDi by puppeteer-core, for the Go tests in e2e/firefox_test.go.
//
//   node driver.js --firefox /usr/bin/firefox-esr --downloads DIR [--profile DIR]
//
// --profile: the profile's folder (the caller removes it), else a new one
// puppeteer makes and removes.
// Commands come on stdin, one JSON object a line: {"id": 1, "op": "goto",
// "page": "p1", "url": "..."}. Each gets one answer on stdout, {"id": 1,
// "value": ...} or {"id": 1, "error": "..."}; between them come the pages'
// events, {"event": "console" | "pageerror" | "http" | "requestfailed" |
// "violation" | "popup", "page": "p1", ...}. The first line is {"event":
// "ready", "version": "firefox/..."}; stdin's end closes the browser.
//
// Operations: newPage; goto {url}; reload; eval {expr} (the value of the
// expression, a promise awaited, as JSON); click {sel}; upload {sel, path}
// (set a file input to the file, as a user's pick); viewport {w, h,
// mobile}; screenshot {path} (full page, PNG); popup {sel} (click and
// return the page the click opened); close.
// viewport sets the size only: {mobile} is not emulated (see below).
'use strict';

const puppeteer = require('puppeteer-core');
const readline = require('node:readline');

function arg(name, def) {
  const i = process.argv.indexOf('--' + name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// cspWatch runs in every document before the page's own scripts and hands
// each Content-Security-Policy violation to the harness (as the Chromium
// harness's script of the same name does).
function cspWatch() {
  document.addEventListener('securitypolicyviolation', (e) => {
    const report = window.__e2eViolation;
    if (report) report({directive: e.effectiveDirective || e.violatedDirective, blocked: e.blockedURI,
      source: e.sourceFile + ':' + e.lineNumber, sample: e.sample || '', disposition: e.disposition});
  }, true);
}

const pages = new Map(); // id -> puppeteer Page
let nextPage = 0;

async function watch(page, viewport) {
  const id = 'p' + (++nextPage);
  pages.set(id, page);
  page.on('console', (m) => {
    const loc = m.location() || {};
    send({event: 'console', page: id, level: m.type(), text: m.text(), url: loc.url || '', line: loc.lineNumber || 0});
  });
  page.on('pageerror', (e) => send({event: 'pageerror', page: id, text: String(e && e.stack || e)}));
  page.on('response', (r) => {
    if (r.status() >= 400) send({event: 'http', page: id, status: r.status(), url: r.url()});
  });
  page.on('requestfailed', (r) => {
    const f = r.failure();
    send({event: 'requestfailed', page: id, url: r.url(), text: f ? f.errorText : ''});
  });
  page.on('popup', (p) => send({event: 'popup', page: id, url: p ? p.url() : ''}));
  await page.exposeFunction('__e2eViolation', (v) => send({event: 'violation', page: id, ...v}));
  await page.evaluateOnNewDocument(cspWatch);
  if (viewport) await page.setViewport(viewport);
  return id;
}

function pageOf(cmd) {
  const p = pages.get(cmd.page);
  if (!p) throw new Error('no page ' + cmd.page);
  return p;
}

async function run(browser, cmd) {
  switch (cmd.op) {
    case 'newPage':
      return {page: await watch(await browser.newPage(), {width: 1280, height: 900})};
    case 'goto':
      await pageOf(cmd).goto(cmd.url, {waitUntil: 'load'});
      return null;
    case 'reload':
      await pageOf(cmd).reload({waitUntil: 'load'});
      return null;
    case 'eval': {
      // JSON in the page: the value as the page sees it (undefined is null).
      const s = await pageOf(cmd).evaluate(`(async () => JSON.stringify(await (${cmd.expr})))()`);
      return s === undefined ? null : JSON.parse(s);
    }
    case 'click':
      await pageOf(cmd).click(cmd.sel);
      return null;
    case 'upload': {
      const input = await pageOf(cmd).waitForSelector(cmd.sel, {timeout: 10000});
      await input.uploadFile(cmd.path);
      await input.dispose();
      return null;
    }
    case 'viewport':
      // The size only (cmd.mobile is not emulated): over BiDi, puppeteer
      // reloads the page when touch emulation changes, which would lose a
      // join page's participant; Firefox has no mobile viewport to emulate.
      await pageOf(cmd).setViewport({width: cmd.w, height: cmd.h});
      return null;
    case 'screenshot':
      await pageOf(cmd).screenshot({path: cmd.path, fullPage: true});
      return null;
    case 'popup': {
      const page = pageOf(cmd);
      let timer;
      // The page's popup event, or else the browser's new page target:
      // over BiDi on a loaded machine the first has been seen to miss.
      const onTarget = async (t) => {
        if (t.type() === 'page') settle(await t.page());
      };
      let settle;
      const opened = new Promise((resolve) => {
        settle = resolve;
        page.once('popup', resolve);
        browser.on('targetcreated', onTarget);
        timer = setTimeout(() => resolve(null), 40000);
      });
      // The element's own click, which BiDi runs with user activation (so
      // window.open may open a tab): a mouse click at coordinates read
      // before misses when the page's layout moves meanwhile.
      await page.waitForSelector(cmd.sel, {visible: true, timeout: 10000});
      await page.$eval(cmd.sel, (e) => e.click());
      const p = await opened;
      clearTimeout(timer);
      browser.off('targetcreated', onTarget);
      if (!p) throw new Error('the click on ' + cmd.sel + ' opened no page');
      const id = await watch(p, {width: 1280, height: 900});
      // The watchers came after the new page's first load began: load it
      // again (its session storage, copied from the opener, stays) so
      // that its console and violations are all seen.
      await p.reload({waitUntil: 'load'});
      return {page: id};
    }
    case 'close':
      await pageOf(cmd).close();
      pages.delete(cmd.page);
      return null;
    default:
      throw new Error('unknown op ' + cmd.op);
  }
}

async function main() {
  const downloads = arg('downloads', '');
  const prefs = {
    // No calls home: the tests run offline.
    'app.update.enabled': false,
    'browser.safebrowsing.malware.enabled': false,
    'browser.safebrowsing.phishing.enabled': false,
    'datareporting.policy.dataSubmissionEnabled': false,
    'toolkit.telemetry.enabled': false,
    'network.captive-portal-service.enabled': false,
    'network.connectivity-service.enabled': false,
  };
  if (downloads) {
    // Downloads go straight into the folder, under the name the page gives.
    Object.assign(prefs, {
      'browser.download.dir': downloads,
      'browser.download.folderList': 2,
      'browser.download.useDownloadDir': true,
      'browser.download.always_ask_before_handling_new_types': false,
      'browser.download.manager.showWhenStarting': false,
    });
  }
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: arg('firefox', '/usr/bin/firefox-esr'),
    headless: true,
    extraPrefsFirefox: prefs,
    userDataDir: arg('profile', undefined),
    protocolTimeout: 60000,
  });
  let closing = false;
  browser.on('disconnected', () => {
    if (closing) return;
    send({event: 'disconnected'});
    process.exit(3);
  });
  send({event: 'ready', version: await browser.version()});

  // Commands run one after the other, in the order they came.
  let queue = Promise.resolve();
  const rl = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  rl.on('line', (line) => {
    if (!line.trim()) return;
    queue = queue.then(async () => {
      let cmd;
      try {
        cmd = JSON.parse(line);
        send({id: cmd.id, value: await run(browser, cmd)});
      } catch (e) {
        send({id: cmd ? cmd.id : 0, error: String(e && e.message || e)});
      }
    });
  });
  rl.on('close', () => {
    queue.then(() => { closing = true; return browser.close(); }).then(() => process.exit(0), () => process.exit(1));
  });
}

main().catch((e) => {
  send({event: 'fatal', error: String(e && e.stack || e)});
  process.exit(2);
});
