/* epar inspect: head_view.html, the head view: one self-contained page (no network, its style and script compiled in),
 * tokens in two columns, lines weighted by attention, and the model view of every layer and head. */
#include <math.h>
#include <stdio.h>
#include "lib/err.h"
#include "lib/version.h"
#include "experiments/train/inspect_int.h"

/* a JSON string (with "<" escaped, so no text can close the script element) */
static void script_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* html text */
static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static const char head_view_css[] =
    "<style>\n"
    "*{box-sizing:border-box}\n"
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;margin:0 auto;max-width:1100px;padding:12px}\n"
    "h1{font-size:1.3em;margin:.2em 0;overflow-wrap:anywhere}\n"
    "h2{font-size:1.05em;margin:.8em 0 .2em}\n"
    "p{margin:.4em 0}\n"
    ".controls{display:flex;flex-wrap:wrap;gap:.5em 1.2em;align-items:center;margin:.6em 0;position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd;z-index:1}\n"
    "select{font-size:1em}\n"
    "#legend{display:flex;flex-wrap:wrap;gap:.3em 1em;align-items:center;font-size:.8em;color:#555}\n"
    "#legend svg{display:inline-block;width:auto;vertical-align:middle}\n"
    /* a fixed height: text that wraps onto more lines while hovering must not move the tokens under the pointer */
    "#info{flex:1 1 100%;height:4.4em;overflow-y:auto;margin:0;font-size:.9em;color:#333;overflow-wrap:anywhere}\n"
    ".model{display:grid;gap:4px;align-items:center;justify-content:start;overflow-x:auto;max-width:100%;padding-bottom:4px}\n"
    ".model .lab{font-size:.75em;color:#666;white-space:nowrap}\n"
    ".thumb{padding:0;border:1px solid #ccc;background:#fff;border-radius:3px;cursor:pointer;line-height:0}\n"
    ".thumb:hover,.thumb:focus-visible{border-color:#1f77b4}\n"
    ".thumb.sel{outline:3px solid #d62728;outline-offset:-1px;border-color:#d62728}\n"
    ".view{display:grid;grid-template-columns:minmax(0,6.5em) minmax(0,9em) minmax(0,1fr) minmax(0,9em);align-items:start}\n"
    ".hdr{font-size:.75em;color:#666;padding:0 4px 2px}\n"
    ".hdr.q,.hdr.p{text-align:right}\n"
    ".col{min-width:0}\n"
    ".tok,.pr{height:20px;line-height:20px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font:13px ui-monospace,Menlo,Consolas,monospace;padding:0 4px;border-radius:3px}\n"
    ".tok{cursor:pointer}\n"
    ".pr{text-align:right}\n"
    ".pr.right{color:#1a7f37}\n"
    ".pr.wrong{color:#c62828}\n"
    ".tok .pos{color:#999;font-size:11px}\n"
    ".left .tok{text-align:right}\n"
    ".tok:hover,.tok:focus-visible,.tok.sel{outline:2px solid #1f77b4;outline-offset:-2px}\n"
    ".tok.scored{font-weight:bold}\n"
    ".tok.rel{text-decoration:underline;text-decoration-color:#d62728;text-decoration-thickness:2px}\n"
    "#lines{display:block;width:100%}\n"
    "line{stroke:#1f77b4}\n"
    ".legend{font-size:.85em;color:#555}\n"
    "@media (max-width:600px){.view{grid-template-columns:minmax(0,4.5em) minmax(0,6.5em) minmax(0,1fr) minmax(0,6.5em)}.tok .pos{display:none}body{padding:8px}}\n"
    "</style>\n";

static const char head_view_js[] =
    "<script>\n"
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('data').textContent);\n"
    "var T=D.tokens.length,RH=20,NS='http://www.w3.org/2000/svg',MIN=0.02;\n"
    "var ls=document.getElementById('layer'),hs=document.getElementById('head'),svg=document.getElementById('lines');\n"
    "var left=document.getElementById('left'),right=document.getElementById('right'),info=document.getElementById('info');\n"
    "var predc=document.getElementById('pred'),model=document.getElementById('model'),legend=document.getElementById('legend');\n"
    "var sel=-1,side='',pinned=false;\n"
    /* one encoding of a weight, for the lines, the thumbnails and the legend */
    "function width(w){return 0.5+4*w;}\n"
    "function opacity(w){return Math.min(1,0.08+w);}\n"
    "function shading(w){return 'rgba(255,127,14,'+Math.min(1,w).toFixed(3)+')';}\n"
    "D.layers.forEach(function(l,a){var o=document.createElement('option');o.value=a;o.textContent='layer '+l;ls.appendChild(o);});\n"
    "D.heads.forEach(function(h,b){var o=document.createElement('option');o.value=b;o.textContent='head '+h;hs.appendChild(o);});\n"
    "if(D.heads.length>1){var m=document.createElement('option');m.value='mean';m.textContent='mean of the heads';hs.appendChild(m);}\n"
    "svg.setAttribute('viewBox','0 0 100 '+(T*RH));svg.setAttribute('preserveAspectRatio','none');svg.style.height=(T*RH)+'px';\n"
    "function el(tag,cls,text){var d=document.createElement(tag);if(cls)d.className=cls;if(text!==undefined)d.textContent=text;return d;}\n"
    "function tok(i,cls){var d=el('div','tok'+(D.scored[i]?' scored':''));d.tabIndex=0;\n"
    " d.dataset.i=i;d.dataset.side=cls;d.appendChild(el('span','pos',i+' '));\n"
    " d.appendChild(document.createTextNode(D.tokens[i]));d.title='position '+i+': '+D.tokens[i];return d;}\n"
    "function verdict(i){return D.correct[i]===1?'right':'wrong';}\n"
    "function pred(i){var d=el('div','pr');if(D.correct[i]<0)return d;\n"
    " d.classList.add(verdict(i));d.dataset.correct=D.correct[i];d.dataset.pred=D.pred[i];\n"
    " d.textContent=D.pred[i]+(D.correct[i]===1?' \\u2713':' \\u2717');\n"
    " d.title='position '+i+' predicts '+D.pred[i]+' ('+verdict(i)+'; the target is '+D.target[i]+', given p = '+fmt(D.p_target[i])+')';return d;}\n"
    "function fmt(w){return w===null?'nan':w.toFixed(3);}\n"
    "for(var i=0;i<T;i++){left.appendChild(tok(i,'q'));right.appendChild(tok(i,'k'));predc.appendChild(pred(i));}\n"
    "function rowsOf(a,b){if(b!=='mean')return D.att[a][+b];\n"
    " var n=D.heads.length,r=[];for(var i=0;i<T;i++){r.push([]);for(var j=0;j<=i;j++){var s=0;\n"
    " for(var h=0;h<n;h++)s+=D.att[a][h][i][j];r[i].push(s/n);}}return r;}\n"
    "function rows(){return rowsOf(+ls.value,hs.value);}\n"
    "function draw(){var R=rows();while(svg.firstChild)svg.removeChild(svg.firstChild);var n=0;\n"
    " for(var i=0;i<T;i++)for(var j=0;j<=i;j++){var w=R[i][j];\n"
    "  if(sel>=0&&((side==='q'&&i!==sel)||(side==='k'&&j!==sel)))continue;if(sel<0&&w<MIN)continue;\n"
    "  var e=document.createElementNS(NS,'line');e.setAttribute('x1',0);e.setAttribute('y1',i*RH+RH/2);\n"
    "  e.setAttribute('x2',100);e.setAttribute('y2',j*RH+RH/2);e.setAttribute('stroke-opacity',opacity(w).toFixed(3));\n"
    "  e.setAttribute('stroke-width',width(w).toFixed(2));e.setAttribute('vector-effect','non-scaling-stroke');\n"
    "  svg.appendChild(e);n++;}\n"
    " svg.dataset.lines=n;svg.dataset.view=ls.value+':'+hs.value+':'+side+sel;shade(R);describe(R);mark();}\n"
    "function shade(R){var L=left.children,K=right.children;\n"
    " for(var i=0;i<T;i++){L[i].style.background='';K[i].style.background='';L[i].classList.toggle('sel',side==='q'&&i===sel);\n"
    "  K[i].classList.toggle('sel',side==='k'&&i===sel);K[i].classList.toggle('rel',side==='q'&&sel>=0&&D.relevant[sel].indexOf(i)>=0);}\n"
    " if(sel<0)return;for(var k=0;k<T;k++){var w=side==='q'?(k<=sel?R[sel][k]:0):(k>=sel?R[k][sel]:0);\n"
    "  (side==='q'?K:L)[k].style.background=shading(w);}}\n"
    "function describe(R){var where=ls.options[ls.selectedIndex].text+', '+hs.options[hs.selectedIndex].text;\n"
    " if(sel<0){info.textContent=where+': every query row, lines for weights of '+MIN+' and more. Hover or click a token.';return;}\n"
    " var items=[];if(side==='q'){for(var j=0;j<=sel;j++)items.push([R[sel][j],j]);}else{for(var i=sel;i<T;i++)items.push([R[i][sel],i]);}\n"
    " items.sort(function(a,b){return b[0]-a[0];});var top=items.slice(0,5).map(function(p){return p[1]+' '+D.tokens[p[1]]+' ('+fmt(p[0])+')';});\n"
    " info.textContent=where+(pinned?' (pinned)':'')+': '+(side==='q'?'query '+sel+' '+D.tokens[sel]+' attends to ':'key '+sel+' '+D.tokens[sel]+' is attended by ')+top.join(', ')\n"
    "  +(side==='q'&&D.relevant[sel].length?'; answer-relevant: '+D.relevant[sel].join(' '):'')\n"
    "  +(side==='q'&&D.correct[sel]>=0?'; predicts '+D.pred[sel]+', the target is '+D.target[sel]+' ('+verdict(sel)+')':'');}\n"
    "function pick(e,click){var t=e.target.closest('.tok');if(!t)return;if(pinned&&!click)return;\n"
    " var i=+t.dataset.i,s=t.dataset.side;if(click){if(pinned&&i===sel&&s===side){pinned=false;sel=-1;side='';}else{pinned=true;sel=i;side=s;}}\n"
    " else{sel=i;side=s;}draw();}\n"
    "function leave(){if(!pinned&&sel>=0){sel=-1;side='';draw();}}\n"
    "[left,right].forEach(function(c){c.addEventListener('mouseover',function(e){pick(e,false);});c.addEventListener('mouseleave',leave);\n"
    " c.addEventListener('click',function(e){pick(e,true);});c.addEventListener('focusin',function(e){pick(e,false);});\n"
    " c.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();pick(e,true);}});});\n"
    "ls.addEventListener('change',draw);hs.addEventListener('change',draw);\n"
    /* the legend: sample lines and the shading scale, drawn with the functions above */
    "(function(){var ws=[MIN,0.1,0.25,0.5,1],W=46,H=30,s=document.createElementNS(NS,'svg');\n"
    " s.setAttribute('width',W*ws.length);s.setAttribute('height',H);s.setAttribute('role','img');\n"
    " s.setAttribute('aria-label','line width and opacity for the weights '+ws.join(', '));s.id='legend-lines';\n"
    " ws.forEach(function(w,k){var e=document.createElementNS(NS,'line');e.setAttribute('x1',k*W+6);e.setAttribute('x2',k*W+W-6);\n"
    "  e.setAttribute('y1',9);e.setAttribute('y2',9);e.setAttribute('stroke-width',width(w).toFixed(2));\n"
    "  e.setAttribute('stroke-opacity',opacity(w).toFixed(3));e.dataset.weight=w;s.appendChild(e);\n"
    "  var t=document.createElementNS(NS,'text');t.setAttribute('x',k*W+W/2);t.setAttribute('y',27);t.setAttribute('text-anchor','middle');\n"
    "  t.setAttribute('font-size','11');t.setAttribute('fill','#555');t.textContent=String(w);s.appendChild(t);});\n"
    " var g=el('span');g.id='legend-shading';g.style.cssText='display:inline-block;width:90px;height:12px;vertical-align:middle;border:1px solid #ccc;background:linear-gradient(to right,'+shading(0)+','+shading(1)+')';\n"
    " legend.appendChild(el('span','','line: weight'));legend.appendChild(s);\n"
    " var sh=el('span','','shading of the other side: 0 ');sh.appendChild(g);sh.appendChild(document.createTextNode(' 1'));legend.appendChild(sh);})();\n"
    /* the model view: every layer (row) and head (column), the same lines on a canvas; a click shows it above */
    "var thumbs=[];\n"
    "(function(){var nh=D.heads.length,avail=(model.clientWidth||640)-70,dpr=window.devicePixelRatio||1;\n"
    " var S=Math.max(40,Math.min(96,Math.floor(avail/nh)-6));\n"   /* the heads of a layer fit the width when they can */
    " model.style.gridTemplateColumns='auto repeat('+nh+','+(S+2)+'px)';model.appendChild(el('span','lab',''));\n"
    " D.heads.forEach(function(h){model.appendChild(el('span','lab','head '+h));});\n"
    " D.layers.forEach(function(l,a){model.appendChild(el('span','lab','layer '+l));\n"
    "  D.heads.forEach(function(h,b){var btn=el('button','thumb');btn.type='button';btn.dataset.layer=a;btn.dataset.head=b;\n"
    "   btn.title='layer '+l+', head '+h;btn.setAttribute('aria-label','show layer '+l+', head '+h);\n"
    "   var c=el('canvas');c.width=S*dpr;c.height=S*dpr;c.style.width=S+'px';c.style.height=S+'px';btn.appendChild(c);\n"
    "   var x=c.getContext('2d'),R=D.att[a][b],y=function(i){return (i+0.5)/T*S*dpr;};x.strokeStyle='#1f77b4';\n"
    "   for(var i=0;i<T;i++)for(var j=0;j<=i;j++){var w=R[i][j];if(w<MIN)continue;x.globalAlpha=opacity(w);\n"
    "    x.lineWidth=Math.max(0.4,width(w)*S/(T*RH)*2)*dpr;x.beginPath();x.moveTo(0,y(i));x.lineTo(S*dpr,y(j));x.stroke();}\n"
    "   btn.addEventListener('click',function(){ls.value=a;hs.value=b;draw();});model.appendChild(btn);thumbs.push(btn);});});})();\n"
    "function mark(){thumbs.forEach(function(t){t.classList.toggle('sel',t.dataset.layer===ls.value&&t.dataset.head===hs.value);});}\n"
    "draw();\n"
    "})();\n"
    "</script>\n";

/* the symbols of ids (n) as a JSON array's items, comma-separated */
static void symbols_json(FILE *f, const struct epar_inspect *x, const int *ids, int n)
{
    for (int q = 0; q < n; q++) {
        char s[64];
        epar_inspect_symbol(x, ids[q], s, sizeof s);
        if (q) fputc(',', f);
        script_json_str(f, s);
    }
}

/* the data the page draws: tokens, selected layers and heads, their causal rows, scored and relevant positions */
static void head_view_data(FILE *f, const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    int T = x->T;
    fputs("<script type=\"application/json\" id=\"data\">{\"tokens\":[", f);
    symbols_json(f, x, x->tok, T);
    fputs("],\"scored\":[", f);
    for (int q = 0; q < T; q++) fprintf(f, "%s%d", q ? "," : "", x->mask[q] > 0);
    /* the model's argmax at each position, the target, and at the scored positions whether they agree (-1: not
     * scored), as tokens.csv has them */
    fputs("],\"pred\":[", f);
    symbols_json(f, x, x->pred, T);
    fputs("],\"target\":[", f);
    symbols_json(f, x, x->tgt, T);
    fputs("],\"correct\":[", f);
    for (int q = 0; q < T; q++)
        fprintf(f, "%s%d", q ? "," : "", x->mask[q] > 0 && x->tgt[q] >= 0 ? x->pred[q] == x->tgt[q] : -1);
    fputs("],\"p_target\":[", f);
    for (int q = 0; q < T; q++) {
        if (q) fputc(',', f);
        if (isfinite(x->p_target[q])) fprintf(f, "%.4g", (double)x->p_target[q]);
        else fputs("null", f);
    }
    fputs("],\"relevant\":[", f);
    for (int q = 0; q < T; q++) {
        fputs(q ? ",[" : "[", f);
        for (int j = 0, n = 0; j <= q; j++)
            if (x->rel[(size_t)q * T + j]) fprintf(f, "%s%d", n++ ? "," : "", j);
        fputc(']', f);
    }
    fputs("],\"layers\":[", f);
    for (int a = 0; a < nl; a++) fprintf(f, "%s%d", a ? "," : "", ls[a]);
    fputs("],\"heads\":[", f);
    for (int b = 0; b < nh; b++) fprintf(f, "%s%d", b ? "," : "", hs[b]);
    fputs("],\"att\":[", f);
    for (int a = 0; a < nl; a++) {
        fputs(a ? ",[" : "[", f);
        for (int b = 0; b < nh; b++) {
            const float *A = x->att + ((size_t)ls[a] * x->NH + hs[b]) * T * T;
            fputs(b ? ",[" : "[", f);
            for (int i = 0; i < T; i++) {
                fputs(i ? ",[" : "[", f);
                for (int j = 0; j <= i; j++) fprintf(f, "%s%.4g", j ? "," : "", (double)A[(size_t)i * T + j]);
                fputc(']', f);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("]}</script>\n", f);
}

int epar_inspect_head_view(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh, struct epar_out *o)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, epar_out_path(o, "head_view.html"));
    if (!f) return EPAR_EIO;
    char in[64];
    epar_inspect_input_desc(x, in, sizeof in);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Head view: ", f);
    html_text(f, x->name);
    fputs("</title>\n", f);
    fputs(head_view_css, f);
    fputs("</head><body>\n<h1>Head view: ", f);
    html_text(f, x->name);
    fprintf(f, "</h1>\n<p>%s of task <code>%s</code>, %d tokens; model after %ld training steps, checkpoint <code>",
            in, epar_task_name(x->run.cfg.task.id), x->T, x->run.step);
    html_text(f, x->path);
    int scored = 0, right = 0;
    for (int q = 0; q < x->T; q++)
        if (x->mask[q] > 0 && x->tgt[q] >= 0) {
            scored++;
            right += x->pred[q] == x->tgt[q];
        }
    fprintf(f, "</code>. The model's prediction (its most probable next token) is right at %d of the %d scored positions.</p>\n",
            right, scored);
    fputs("<p class=\"legend\">Query positions on the left, key positions on the right. A line joins query i to "
          "key j &le; i, as thick and opaque as the weight i gives j (the scale is in the bar below). Hover over a token "
          "for its row (a query) or column (a key); click to pin it. Bold tokens are scored: beside them the model's "
          "prediction, &#x2713; when it is the target, &#x2717; when not. Underlined keys are the ones the answer needs. "
          "The model view below the bar has every layer and head; click one to show it here. Written by "
          "<code>epar inspect</code> (epar " EPAR_VERSION "); the numbers are in <code>attention.csv</code> and "
          "<code>tokens.csv</code>.</p>\n"
          "<div class=\"controls\"><label>Layer <select id=\"layer\"></select></label>"
          "<label>Head <select id=\"head\"></select></label><div id=\"legend\"></div>"
          "<p id=\"info\" aria-live=\"polite\"></p></div>\n"
          "<h2>Model view: every layer and head</h2>\n<div class=\"model\" id=\"model\"></div>\n"
          "<h2>Head view</h2>\n"
          "<div class=\"view\"><div class=\"hdr p\">prediction</div><div class=\"hdr q\">query</div><div></div>"
          "<div class=\"hdr k\">key</div><div class=\"col preds\" id=\"pred\"></div>"
          "<div class=\"col left\" id=\"left\"></div><svg id=\"lines\" role=\"img\" "
          "aria-label=\"attention lines\"></svg><div class=\"col right\" id=\"right\"></div></div>\n", f);
    head_view_data(f, x, ls, nl, hs, nh);
    fputs(head_view_js, f);
    fputs("</body></html>\n", f);
    return epar_out_fclose(&w);
}
