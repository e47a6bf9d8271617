// Package reference holds the API reference page served at /docs: an HTML
// page that renders /openapi.yaml with Redoc, whose standalone bundle is
// embedded here (see NOTICE.md), so the page needs no network beyond the
// server itself.
package reference

import _ "embed"

// Script is Redoc's standalone bundle (redoc@2.5.4).
//
//go:embed redoc.standalone.js
var Script []byte

// ScriptName is the file name the page loads Script by, relative to the
// page.
const ScriptName = "redoc.standalone.js"

// Page is the reference page. It loads the description from
// "openapi.yaml" and the script from "docs/redoc.standalone.js", both
// relative to the page at /docs, so it works behind a path prefix too.
var Page = []byte(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>quantserve API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="openapi.yaml" hide-download-button="false"></redoc>
<script src="docs/` + ScriptName + `"></script>
</body>
</html>
`)
