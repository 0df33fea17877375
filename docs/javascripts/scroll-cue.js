// A table or code block that scrolls sideways and has more to its right carries the class
// "scroll-more", which fades its right edge (docs/stylesheets/extra.css): the cue that
// there is more to see. Scrolled to its end, the fade goes.
(function () {
  var BOXES = ".md-typeset__scrollwrap, .md-typeset table, .md-typeset pre > code";
  function mark(box) {
    box.classList.toggle("scroll-more",
                         box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
  }
  function markAll() {
    document.querySelectorAll(BOXES).forEach(mark);
  }
  document.addEventListener("scroll", function (event) {
    if (event.target.matches && event.target.matches(BOXES)) mark(event.target);
  }, true);
  window.addEventListener("resize", markAll);
  window.addEventListener("load", markAll);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", markAll);
  } else {
    markAll();
  }
})();
