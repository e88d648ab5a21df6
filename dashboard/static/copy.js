// The dashboard's only script: the copy button beside a key shown once. Without it the
// key is still selectable in its read-only field, and the button stays hidden.
(function () {
  "use strict";
  var buttons = document.querySelectorAll("button[data-copy]");
  Array.prototype.forEach.call(buttons, function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById("copy-status");
    if (!field) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      function done(text) { if (status) { status.textContent = text; } }
      field.select();
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(field.value).then(
          function () { done("Copied."); },
          function () { done("Press Ctrl+C (or Cmd+C) to copy the selected key."); }
        );
      } else {
        done("Press Ctrl+C (or Cmd+C) to copy the selected key.");
      }
    });
  });
})();
