// index.html: the federations on this server. A file, not an inline script,
// for the CSP.
fetch('/api/federations').then(r => r.json()).then(list => {
  const ul = document.getElementById('feds');
  ul.textContent = '';
  if (!list.length) { ul.innerHTML = '<li>none yet: <a href="/new">create one</a>, or run <code>hyfed create --server URL</code></li>'; return; }
  for (const f of list) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = '/federations/' + encodeURIComponent(f.id);
    a.textContent = (f.name || f.id) + ' — ' + f.state + ', round ' + f.round + ' of ' + f.rounds + ', ' + f.participants + ' participants';
    li.appendChild(a);
    if (f.insecure) {
      const w = document.createElement('strong');
      w.className = 'insecure-tag'; w.style.color = '#b00000';
      w.textContent = ' INSECURE: no encryption';
      li.appendChild(w);
    }
    ul.appendChild(li);
  }
});
