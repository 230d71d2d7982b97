// The console's only script: refresh a page that shows work in progress
// (a pending event, a running replay job), and "select all" checkboxes.
(function () {
  var r = document.querySelector("[data-refresh]");
  if (r) {
    setTimeout(function () { location.reload(); }, 1000 * Number(r.getAttribute("data-refresh") || 2));
  }
  document.querySelectorAll("[data-select-all]").forEach(function (box) {
    box.addEventListener("change", function () {
      document.querySelectorAll('input[type=checkbox][name="' + box.getAttribute("data-select-all") + '"]')
        .forEach(function (c) { c.checked = box.checked; });
    });
  });
})();
