// index.html: the federations on this server. Listing them needs the
// server's create token, which comes in the fragment: /#create=<token>. A
// file, not an inline script, for the CSP.
'use strict';
const H = window.hyfed, $ = H.$;
const createToken = H.fragment().create || '';
const ul = $('feds');
if (createToken) {
  // The create page gets the token too: one click to create.
  $('new-link').href = '/new#create=' + encodeURIComponent(createToken);
}

// howTo says how to get the list, with what went wrong first.
function howTo(what) {
  ul.textContent = '';
  const li = ul.appendChild(H.el('li', null, {id: 'feds-how'}));
  if (what) li.appendChild(H.el('strong', what + ' '));
  li.appendChild(document.createTextNode('The list of federations needs the server\'s create token: take the '));
  li.appendChild(H.el('code', 'create: http://…/new#create=…'));
  li.appendChild(document.createTextNode(' URL that hyfed serve printed at start and open it with / in place of /new ('));
  li.appendChild(H.el('code', 'http://…/#create=…'));
  li.appendChild(document.createTextNode('). A federation\'s own dashboard link works without it.'));
}

if (!createToken) {
  howTo('');
} else {
  H.getJSON('/api/federations', createToken).then((list) => {
    ul.textContent = '';
    if (!list || !list.length) {
      const li = ul.appendChild(H.el('li', 'none yet: '));
      li.appendChild(H.el('a', 'create one', {href: '/new#create=' + encodeURIComponent(createToken)}));
      li.appendChild(document.createTextNode(', or run '));
      li.appendChild(H.el('code', 'hyfed create --server URL'));
      return;
    }
    for (const f of list) {
      const li = document.createElement('li');
      // The dashboard link with its token when the server lists one, else
      // the bare page (which says which link it needs).
      const href = f.admin_path || f.dashboard_path || '/federations/' + encodeURIComponent(f.id);
      li.appendChild(H.el('a', (f.name || f.id) + ' — ' + f.state + ', round ' + f.round + ' of ' + f.rounds + ', ' + f.participants + ' participants', {href}));
      if (f.insecure) {
        const w = H.el('strong', ' INSECURE: no encryption', {class: 'insecure-tag'});
        w.style.color = '#b00000';
        li.appendChild(w);
      }
      ul.appendChild(li);
    }
  }).catch((e) => howTo(e.status === 401 || e.status === 403 ? 'The server refused this link\'s create token (' + e.message + ').' : 'Cannot list the federations: ' + e.message + '.'));
}
