// A code block that scrolls sideways and has more to its right carries the class
// "scroll-more", which fades its right edge (docs/stylesheets/extra.css): the cue that
// there is more to see. Scrolled to its end, the fade goes. Tables have their cue in CSS
// alone: a class on a table would drop Material's styles for "table:not([class])", its
// borders and cell padding, and the cells would run together.
(function () {
  var BOXES = ".md-typeset pre > code";
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
