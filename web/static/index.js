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
      // The server answers an empty list to a token that is not its create
      // token too: say both.
      const li = ul.appendChild(H.el('li', 'None: this server has no federation yet, or the create token in this link is not ' +
        'the server\'s (it lists federations only for its own; check the create: URL hyfed serve printed). ', {id: 'feds-how'}));
      li.appendChild(H.el('a', 'Create one', {href: '/new#create=' + encodeURIComponent(createToken)}));
      li.appendChild(document.createTextNode(', or run '));
      li.appendChild(H.el('code', 'hyfed create --server URL'));
      li.appendChild(document.createTextNode('.'));
      return;
    }
    // The server keeps federations' tokens only as hashes, so the list has
    // none: a dashboard opens with the link its organizer holds.
    $('feds-note').hidden = false;
    for (const f of list) {
      const li = document.createElement('li');
      const href = '/federations/' + encodeURIComponent(f.id);
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
