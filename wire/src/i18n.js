// The lab's pages in English or Chinese (seckill_wire::i18n inlines this
// script into the status page and the console). A page calls
// seckillI18n(words, redraw) with its own dictionary, English → 中文, and
// marks its fixed text with data-i18n (the text), data-i18n-title and
// data-i18n-placeholder; text drawn by its script goes through i18n.t().
// The language: the one chosen with the #lang button (kept in
// localStorage), else the one the server read from Accept-Language
// (<html lang>). Strategy, scenario, outcome and metric names are never
// translated.
function seckillI18n(words, redraw) {
  const KEY = "seckill-lang";
  const saved = localStorage.getItem(KEY);
  let lang = saved === "zh" || saved === "en" ? saved
    : (document.documentElement.lang || "").toLowerCase().startsWith("zh") ? "zh" : "en";
  const t = (en) => (lang === "zh" && Object.prototype.hasOwnProperty.call(words, en) ? words[en] : en);
  const each = (attr, read, write) => {
    for (const el of document.querySelectorAll("[" + attr + "]")) {
      if (el.dataset.en === undefined) el.dataset.en = read(el);
      write(el, t(el.dataset.en));
    }
  };
  function apply() {
    document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
    each("data-i18n", (el) => el.textContent, (el, v) => { el.textContent = v; });
    each("data-i18n-title", (el) => el.title, (el, v) => { el.title = v; });
    each("data-i18n-placeholder", (el) => el.placeholder, (el, v) => { el.placeholder = v; });
    const button = document.getElementById("lang");
    if (button) button.textContent = lang === "zh" ? "English" : "中文";
  }
  const i18n = {
    get lang() { return lang; },
    t,
    toggle() {
      lang = lang === "zh" ? "en" : "zh";
      localStorage.setItem(KEY, lang);
      apply();
      if (redraw) redraw();
    },
  };
  apply();
  const button = document.getElementById("lang");
  if (button) button.addEventListener("click", () => i18n.toggle());
  return i18n;
}
