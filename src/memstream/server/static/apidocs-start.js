// Starts Swagger UI on /docs or ReDoc on /redoc with this server's OpenAPI document; an
// external file, so that the pages need no inline script.
(function () {
  "use strict";
  var spec = document.body.getAttribute("data-openapi");
  if (document.getElementById("swagger-ui") && window.SwaggerUIBundle) {
    window.ui = window.SwaggerUIBundle({
      url: spec,
      dom_id: "#swagger-ui",
      deepLinking: true,
      presets: [window.SwaggerUIBundle.presets.apis],
      layout: "BaseLayout",
    });
  } else if (document.getElementById("redoc") && window.Redoc) {
    window.Redoc.init(spec, {}, document.getElementById("redoc"));
  }
})();
